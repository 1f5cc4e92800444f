"""`ragpg ask` / `ragpg search`: a temp vault on disk indexed by the real pipeline (`ragpg vault add`,
`ragpg index`), then the commands in-process (one real subprocess), with and without the LLM stub."""

from __future__ import annotations

import json
import re

import pytest

from rag.cli.ask import LOW_CONFIDENCE_NOTE, render_answer, source_lines
from rag.cli.main import main
from rag.notes.ask import NOTICE_NO_LLM, AskResponse, Reference
from tests.notes.conftest import script, write_vault
from tests.support.cli import ragpg

JARGON = re.compile(r"score|chunk|embedding|context|vector|lexical|rerank|retriev|similarity|candidate|cosine"
                    r"|token|centroid|abstain|bm25|floor|prompt|llm|top[-_ ]?k|\bk\b", re.IGNORECASE)
FILES = {
    "projects/alpha.md": "# Alpha\n\n## Timeline\n\nThe alpha project ship date is in March, after the beta review.\n\n"
                         "## Budget\n\nThe alpha project budget is forty thousand euros.\n",
    "meetings/2024-05-01.md": "# Weekly meeting\n\nWe agreed the alpha project ship date: March.\n",
    "recipes/soup.md": "# Tomato soup\n\nSimmer tomatoes with basil for twenty minutes.\n",
    "ops/deploy.md": "# Deploy\n\nThe alpha deploy uses key AKIAIOSFODNN7EXAMPLE on the project servers.\n",
}
QUESTION = "What is the alpha project ship date?"


@pytest.fixture
def cli_env(db_url, tmp_path, monkeypatch):
    env = {"DATABASE_URL": db_url, "RAGPG_EMBEDDING__MODEL": "hash", "RAGPG_CONFIG": str(tmp_path / "none.toml"),
           "RAGPG_DATA_DIR": str(tmp_path / "data")}
    for key in [k for k in __import__("os").environ if k.startswith("RAGPG_")]:
        monkeypatch.delenv(key)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return env


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def vault(cli_env, tmp_path, capsys):
    root = write_vault(tmp_path / "notes", FILES)
    assert run(capsys, "vault", "add", "notes", str(root))[0] == 0
    code, out, err = run(capsys, "index", "--quiet")
    assert code == 0, err
    return root


def test_ask_human_output_without_llm(vault, capsys):
    code, out, err = run(capsys, "ask", QUESTION)
    assert code == 0, err
    assert out.startswith("Answer:\n")
    assert out.count(NOTICE_NO_LLM) == 1
    answer, _, sources = out.partition("\n\nSources:\n")
    assert "The alpha project ship date is in March, after the beta review. [File: alpha.md, Section: Timeline]" in answer
    assert re.search(r"^- projects/alpha\.md \(lines \d+-\d+\)$", sources, re.MULTILINE)
    assert not JARGON.search(out), JARGON.search(out)
    assert err == ""


def test_ask_json_and_debug(vault, capsys):
    code, out, _ = run(capsys, "ask", QUESTION, "--json", "--debug", "--detail", "brief")
    assert code == 0
    data = json.loads(out)
    assert data["abstained"] is False and data["answered_by"] == "extractive"
    assert data["references"][0]["rel_path"] == "projects/alpha.md"
    assert {"vault", "rel_path", "heading_path", "chunk_index", "lines", "snippet"} <= set(data["references"][0])
    assert data["debug"]["k"]["value"] == 3
    assert "notes/projects" in data["debug"]["folders"]["available"]
    assert all({"vector", "lexical", "final"} <= set(c) for c in data["debug"]["candidates"])


def test_ask_human_debug_goes_to_stderr(vault, capsys):
    code, out, err = run(capsys, "ask", QUESTION, "--debug", "--folder", "projects")
    assert code == 0 and out.startswith("Answer:\n") and not JARGON.search(out)
    debug = json.loads(err)
    assert debug["folders"]["selected"][0]["folder"] == "notes/projects/**"


def test_ask_with_llm_cites_sources(vault, capsys, llm_stub, monkeypatch):
    monkeypatch.setenv("RAGPG_LLM__MODEL", "openai/stub")
    monkeypatch.setenv("RAGPG_LLM__API_BASE", f"{llm_stub.url}/v1")
    monkeypatch.setenv("RAGPG_LLM__API_KEY", "sk-test")
    script(llm_stub, folders='["notes/projects", "notes/meetings"]',
           answer="The alpha project ships in March [File: alpha.md, Section: Timeline], as agreed in the "
                  "weekly meeting [File: 2024-05-01.md, Section: Weekly meeting].")
    code, out, err = run(capsys, "ask", QUESTION)
    assert code == 0, err
    assert NOTICE_NO_LLM not in out
    answer, _, sources = out.partition("\n\nSources:\n")
    assert answer.startswith("Answer:\nThe alpha project ships in March [File: alpha.md, Section: Timeline]")
    assert [line.split(" (")[0] for line in sources.splitlines()] == [
        "- projects/alpha.md", "- meetings/2024-05-01.md"]
    assert not JARGON.search(out)


def test_ask_with_llm_down_still_answers_cleanly(vault, capsys, llm_stub, monkeypatch):
    monkeypatch.setenv("RAGPG_LLM__MODEL", "openai/stub")
    monkeypatch.setenv("RAGPG_LLM__API_BASE", f"{llm_stub.url}/v1")
    monkeypatch.setenv("RAGPG_LLM__API_KEY", "sk-test")
    llm_stub.fail_status = 500
    code, out, _ = run(capsys, "ask", QUESTION)
    assert code == 0
    assert out.startswith("Answer:\n(The language model could not be reached, so this answer quotes your notes "
                          "directly.)\nThe alpha project ship date is in March")
    assert "LiteLLM" not in out and "Give Feedback" not in out and not JARGON.search(out)


def test_search_human_and_json(vault, capsys):
    code, out, _ = run(capsys, "search", "alpha deploy servers", "--k", "3")
    assert code == 0
    assert out.startswith("1. ops/deploy.md — Deploy (lines ")
    assert "AKIAIOSFODNN7EXAMPLE" not in out and "REDACTED" in out
    code, out, _ = run(capsys, "search", "alpha", "--folder", "projects", "--json")
    items = json.loads(out)["items"]
    assert items and {i["source_path"] for i in items} == {"projects/alpha.md"}
    assert {"vault", "source_path", "heading_path", "chunk_index", "start_line", "end_line", "snippet",
            "score"} <= set(items[0])
    assert [i["score"] for i in items] == sorted((i["score"] for i in items), reverse=True)


@pytest.mark.parametrize(("args", "code", "message"), [
    (["ask", "  "], 2, "error: the question is empty"),
    (["ask", QUESTION, "--vault", "nope"], 4, "error: unknown vault 'nope' (known vaults: empty, notes)"),
    (["ask", QUESTION, "--folder", "projcts"], 2, "error: no folder named 'projcts' in notes; did you mean: projects"),
    (["ask", QUESTION, "--detail", "verbose"], 2, "error: detail must be one of: brief, normal, detailed"),
    (["ask", QUESTION, "--vault", "empty"], 4, "nothing is indexed in vault 'empty' yet: run `ragpg index`"),
    (["search", QUESTION, "--k", "0"], 2, "error: k must be a whole number between 1 and 100"),
    (["search", "", "--vault", "notes"], 2, "error: the search query is empty"),
])
def test_bad_input_one_line_on_stderr(vault, tmp_path, capsys, args, code, message):
    (tmp_path / "empty").mkdir()
    assert run(capsys, "vault", "add", "empty", str(tmp_path / "empty"))[0] == 0
    got, out, err = run(capsys, *args)
    assert got == code and out == ""
    assert message in err and len(err.strip().splitlines()) == 1
    # nothing lost: the vault still answers
    assert "projects/alpha.md" in run(capsys, "ask", QUESTION)[1]


def test_real_console_script(vault, cli_env):
    result = ragpg("ask", QUESTION, "--json", env=cli_env)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["references"][0]["rel_path"] == "projects/alpha.md"


def test_sources_are_deduplicated_by_source_and_location():
    refs = [Reference("v", "a.md", "A", 0, 1, 4, ""), Reference("v", "a.md", "A", 0, 1, 4, ""),
            Reference("v", "a.md", "B", 1, 6, 9, ""), Reference("v", "b.md", "", 0, 3, 3, "")]
    assert source_lines(refs) == ["- a.md (lines 1-4)", "- a.md (lines 6-9)", "- b.md (line 3)"]
    two_vaults = [Reference("v", "a.md", "", 0, 1, 2, ""), Reference("w", "a.md", "", 0, 1, 2, "")]
    assert source_lines(two_vaults) == ["- v: a.md (lines 1-2)", "- w: a.md (lines 1-2)"]
    abstained = AskResponse("I could not find this information in the available documents.", [], True,
                            "no_relevant_context", answered_by="none")
    assert render_answer(abstained) == "Answer:\nI could not find this information in the available documents."


def test_ask_k_out_of_range_is_clamped_and_noted(vault, capsys):
    code, out, err = run(capsys, "ask", QUESTION, "--k", "20", "--json", "--debug")
    assert code == 0 and err == ""
    k = json.loads(out)["debug"]["k"]
    assert k["value"] == 8 and k["requested"] == 20 and "clamped to 8" in k["reasons"][0]
    code, out, _ = run(capsys, "ask", QUESTION, "--k", "-2")
    assert code == 0 and out.startswith("Answer:\n")


def test_ask_abstains_in_plain_words(vault, capsys):
    question = "Which zebra crossed the quantum volcano yesterday?"
    code, out, err = run(capsys, "ask", question)
    assert code == 0 and err == ""
    assert out == "Answer:\nI could not find this information in the available documents.\n"
    code, out, _ = run(capsys, "ask", question, "--json")
    data = json.loads(out)
    assert (data["abstained"], data["abstain_reason"], data["references"]) == (True, "no_relevant_context", [])
    assert data["answer"] == "I could not find this information in the available documents."


def test_low_confidence_answer_says_so_plainly():
    ref = Reference("v", "a.md", "A", 0, 1, 4, "")
    low = AskResponse("Alpha ships in March. [File: a.md, Section: A]", [ref], False, None, answered_by="extractive",
                      notice=NOTICE_NO_LLM, confidence="low")
    text = render_answer(low)
    assert text.splitlines()[1:3] == [f"({NOTICE_NO_LLM})", f"({LOW_CONFIDENCE_NOTE})"]
    assert not JARGON.search(text)
    normal = AskResponse("Alpha ships in March.", [ref], False, None, confidence="normal")
    assert LOW_CONFIDENCE_NOTE not in render_answer(normal)
