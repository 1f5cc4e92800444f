"""A model's SQL object names have one home: SQL generates them when the model is registered
(`ragpg_sql_name`, `ragpg_model_function_name`) and Python reads them back from the row."""

from __future__ import annotations

import psycopg

from rag.store import models

LONG_A = "sentence-transformers/paraphrase-multilingual-mpnet-base-v2-with-a-very-long-suffix"
LONG_B = "sentence-transformers/paraphrase-multilingual-mpnet-base-v3-with-a-very-long-suffix"


def _functions(conn: psycopg.Connection, model: models.EmbeddingModelRef) -> set[str]:
    names = [model.match_function, model.hybrid_function, model.langchain_function,
             model.hybrid_multi_function, model.folders_function]
    rows = conn.execute("select proname from pg_proc where proname = any(%s)", (names,)).fetchall()
    return {r["proname"] for r in rows}


def test_long_model_names_get_distinct_names_that_exist_in_sql(conn: psycopg.Connection) -> None:
    a = models.register_model(conn, "huggingface", LONG_A, 8)
    b = models.register_model(conn, "huggingface", LONG_B, 8)
    assert a.sql_name != b.sql_name
    for model in (a, b):
        expected = conn.execute("select ragpg_sql_name(%s, %s) as n", (model.provider, model.model)).fetchone()["n"]
        assert model.sql_name == expected
        # Every name Python calls is one SQL created, each within Postgres' 63-byte identifiers.
        assert _functions(conn, model) == {model.match_function, model.hybrid_function, model.langchain_function,
                                           model.hybrid_multi_function, model.folders_function}
        assert max(len(n) for n in _functions(conn, model)) <= 63
        assert model.hybrid_multi_function.endswith(model.sql_name)
    assert models.get_model(conn, "huggingface", LONG_A) == a
    conn.rollback()
