"""No quoted answer, snippet or shown passage carries Obsidian markup (`[[`, `]]`, `![[`) outside code:
what is shown is what a reader of the note sees (rag.obsidian.render_text), whatever the door."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag import compute_context
from rag.config import load_settings
from rag.runtime import Runtime
from tests.ingest_db.helpers import indexed_vault

NOTES = {
    "Random note.md": ("# Random note\nRandom note is a [[Core plugins|core plugin]]. Click **Open random note** "
                       "![[obsidian-icon-dice.svg#icon]] in the [[Ribbon]] to open a random note.\n"
                       "> [!tip] Shortcut\n> Bind [[Hotkeys#Setting hotkeys|a hotkey]] to open a random note.\n"),
    "Sync plans.md": ("# Sync plans\nSee [[Plans and storage limits|Obsidian Sync plan]]: a random note is "
                      "synced with ![[Sync settings#Selective sync]] and ==version history== %%hidden%%.\n"
                      "```\n[[kept in code]]\n```\n"),
    "Ribbon.md": "# Ribbon\nThe [[Ribbon]] holds buttons, like the random note dice. ^ribbon-id\n",
}
QUESTIONS = ["How do I open a random note?", "What does the ribbon hold?", "How is a random note synced?"]


def without_code(text: str) -> str:
    return text.replace("[[kept in code]]", "")


def assert_clean(text: str, where: str) -> None:
    shown = without_code(text)
    for mark in ("![[", "[[", "]]"):
        assert mark not in shown, f"{where} shows {mark!r}: {text!r}"


@pytest.fixture
def vault(cli, tmp_path: Path) -> Path:
    return indexed_vault(cli, tmp_path / "notes", NOTES)


def test_answers_snippets_context_and_chunks_read_as_rendered(vault: Path, cli) -> None:
    for question in QUESTIONS:
        code, out, err = cli("ask", question, "--json")
        assert code == 0, err
        response = json.loads(out)
        assert_clean(response["answer"] or "", f"ask {question!r}")
        for ref in response["references"]:
            assert_clean(ref.get("snippet") or "", f"ask {question!r} source")
        code, out, err = cli("search", question, "--json")
        assert code == 0, err
        items = json.loads(out)["items"]
        assert items and all(i["snippet"] for i in items)
        for item in items:
            assert_clean(item["snippet"], f"search {question!r}")
        code, out, _ = cli("ask", question)  # the terminal answer too
        assert_clean(out, f"ask {question!r} (terminal)")
    rt = Runtime.from_settings(load_settings())
    try:
        result = compute_context(QUESTIONS[0], runtime=rt)
    finally:
        rt.close()
    assert "Ribbon" in result.context
    assert_clean(result.context, "compute_context")
