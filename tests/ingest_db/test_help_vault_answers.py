"""The two questions the answer once got wrong, asked of the Obsidian help vault's own Sync and licence
notes (real files, the local model, no LLM): the quoted answer holds the fact, not a general sentence."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

FOLDERS = ("Obsidian Sync", "Licenses and payment")
CASES = [
    ("Can I get my money back if I cancel Sync a few days after paying?", "within 7 days"),
    ("How far back can I restore old versions on Sync Plus?", "12 months"),
]


@pytest.fixture
def help_notes(cli, shared_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "help"
    for folder in FOLDERS:
        shutil.copytree(shared_data / "obsidian-help" / folder, root / folder)
    monkeypatch.setenv("RAGPG_EMBEDDING__MODEL", "local")
    assert cli("vault", "add", "help", str(root))[0] == 0
    code, _, err = cli("index", "--quiet")
    assert code == 0, err
    return root


@pytest.mark.parametrize(("question", "fact"), CASES)
def test_the_quoted_answer_holds_the_fact(help_notes: Path, cli, question: str, fact: str) -> None:
    code, out, err = cli("ask", question)
    assert code == 0, err
    answer = out.split("Sources:")[0]
    assert fact in answer, out
