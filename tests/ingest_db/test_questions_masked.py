"""A secret typed into a question is masked where the question enters (`rag.arguments.query_text`), before
it is embedded (a remote embedder would receive it), cached in `query_embeddings`, logged or echoed in
an answer or its explanation (red-team finding)."""

from __future__ import annotations

import json

import psycopg
import pytest

from rag.compute import compute_context
from rag.notes.ask import ask, search
from rag.runtime import Runtime
from tests.ingest_db.test_row_security import indexed  # noqa: F401

pytestmark = [pytest.mark.security, pytest.mark.usefixtures("indexed")]

TOKEN = "ghp_" + "Zy9Xw8Vu7T" * 4
PASSWORD = "Hunter2SuperSecret99"
QUESTION = f"How do I deploy the tomato launch code with {TOKEN} and password={PASSWORD}?"


def test_a_secret_in_a_question_is_masked_before_anything_keeps_or_shows_it(
        settings, aconn: psycopg.Connection) -> None:
    rt = Runtime(settings)
    try:
        shown = [ask(QUESTION, runtime=rt, debug=True).model_dump_json(),
                 search(QUESTION, runtime=rt).model_dump_json(),
                 json.dumps(compute_context(QUESTION, mode="base", runtime=rt).to_dict(), default=str)]
    finally:
        rt.close()
    for text in shown:
        assert TOKEN not in text and PASSWORD not in text
    stored = aconn.execute("select coalesce(string_agg(query_text, ' | '), '') as q from query_embeddings").fetchone()["q"]
    assert "tomato launch code" in stored  # the questions were cached, masked
    assert TOKEN not in stored and PASSWORD not in stored
