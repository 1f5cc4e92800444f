"""`ragpg ask` / `ragpg search`: a temp vault on disk indexed by the real pipeline (`ragpg vault add`,
`ragpg index`), then the commands in-process (one real subprocess), with and without the LLM stub.

The config file of `cli_env` pins the tests' abstention model (kit.ABSTAIN), not the fitted defaults."""

from __future__ import annotations

import json
import re

import pytest

from rag.notes.answer import NOTICE_NO_LLM
from rag.notes.results import AnswerDecision, AskResponse, Reference
from rag.notes.signals import SIGNALS
from ragpg_cli.ask import LOW_CONFIDENCE_NOTE, render_answer, source_lines
from tests.notes.conftest import index_vault, script
from tests.support.cli import ragpg, run_in_process
from tests.support.files import write_files

JARGON = re.compile(r"score|chunk|embedding|context|vector|lexical|rerank|retriev|similarity|candidate|cosine"
                    r"|token|centroid|abstain|bm25|floor|prompt|llm|top[-_ ]?k|\bk\b", re.IGNORECASE)
FILES = {
    "projects/alpha.md": "# Alpha\n\n## Timeline\n\nThe alpha project ship date is in March, after the beta review.\n\n"
                         "## Budget\n\nThe alpha project budget is forty thousand euros.\n",
    "projects/alpha-risks.md": "# Risks\n\nA late beta review would move the alpha project ship date to April.\n",
    "meetings/2024-05-01.md": "# Weekly meeting\n\nWe agreed the alpha project ship date: March.\n\n"
                              "## Actions\n\nAnna books the launch room for the ship date.\n",
    "ops/release.md": "# Release checklist\n\nTag the alpha build a week before shipping.\n\n"
                      "## Announcements\n\nThe release notes go out on launch day.\n",
    "recipes/soup.md": "# Tomato soup\n\nSimmer tomatoes with basil for twenty minutes.\n",
    "ops/deploy.md": "# Deploy\n\nThe alpha deploy uses key AKIAIOSFODNN7EXAMPLE on the project servers.\n",
}
QUESTION = "What is the alpha project ship date?"
# The three sentences that state the ship date, best first (each holds every question word), each marked
# with its number in the Sources list.
TIMELINE = "The alpha project ship date is in March, after the beta review. [1]"
MEETING = "We agreed the alpha project ship date: March. [2]"
RISKS = "A late beta review would move the alpha project ship date to April. [3]"
ZEBRA = "Which zebra crossed the quantum volcano yesterday?"


@pytest.fixture
def vault(cli_env, tmp_path, capsys):
    root = write_files(tmp_path / "notes", FILES)
    index_vault(capsys, "notes", root)
    return root


def parts(out: str) -> tuple[list[str], list[str]]:
    """(answer lines, source lines) of the human output."""
    answer, _, sources = out.partition("\n\nSources:\n")
    lines = [line for line in answer.splitlines()[1:] if not line.startswith("(")]
    return lines, [line for line in sources.split("\n\nWhy this answer:")[0].splitlines()
                   if line.startswith(("- ", "["))]


def test_ask_human_output_without_llm(vault, capsys):
    code, out, err = run_in_process(capsys, "ask", QUESTION)
    assert code == 0, err
    assert out.startswith(f"Answer:\n({NOTICE_NO_LLM})\n")
    assert out.count(NOTICE_NO_LLM) == 1
    answer, sources = parts(out)
    assert answer == [TIMELINE, MEETING]  # no [File: ..., Section: ...]: the numbers of the Sources list
    assert sources == ["[1] projects/alpha.md — Alpha › Timeline (lines 3-5)",
                       "[2] meetings/2024-05-01.md — Weekly meeting (lines 1-3)"]
    assert not JARGON.search(out), JARGON.search(out)
    assert "Why this answer:" not in out and err == ""


@pytest.mark.parametrize(("detail", "sentences"), [
    ("brief", [TIMELINE]), ("normal", [TIMELINE, MEETING]), ("detailed", [TIMELINE, MEETING, RISKS])])
def test_detail_changes_the_sentences_and_sources_shown(vault, capsys, detail, sentences):
    # answer_sentences 1/2/3 (defaults); only the sources a sentence was taken from are listed
    code, out, _ = run_in_process(capsys, "ask", QUESTION, "--detail", detail)
    assert code == 0
    answer, listed = parts(out)
    assert answer == sentences and len(listed) == len(sentences) == len(set(listed))
    assert listed[0] == "[1] projects/alpha.md — Alpha › Timeline (lines 3-5)"


def test_k_changes_how_many_passages_are_drawn_on(vault, capsys):
    listed = {}
    for k in ("3", "6"):
        code, out, _ = run_in_process(capsys, "ask", QUESTION, "--detail", "detailed", "--k", k, "--explain")
        assert code == 0
        listed[k] = parts(out)[1]
        assert f"- The answer draws on up to {k} passages." in out.splitlines()
    code, out, _ = run_in_process(capsys, "ask", QUESTION, "--detail", "detailed", "--k", "3", "--json", "--debug")
    data = json.loads(out)
    assert data["debug"]["k"] == {"value": 3, "requested": 3, "reasons": ["explicit k"]}
    drawn = [(c["path"], c["ordinal"]) for c in data["debug"]["candidates"][:3]]
    assert {(r["source_path"], r["ordinal"]) for r in data["references"]} <= set(drawn)


@pytest.mark.parametrize("k", ["0", "2", "9", "10000", "-2"])
def test_ask_k_out_of_range_is_an_error_with_the_range(vault, capsys, k):
    code, out, err = run_in_process(capsys, "ask", QUESTION, "--k", k)
    assert code == 2 and out == ""
    assert err.strip() == f"error: k must be between 3 and 8, got {k}"


def test_explain_says_how_the_answer_was_found(vault, capsys):
    code, out, err = run_in_process(capsys, "ask", QUESTION, "--explain")
    assert code == 0 and err == ""
    answer, _, why = out.partition("\n\nWhy this answer:\n")
    assert parts(answer)[0] == [TIMELINE, MEETING]
    lines = why.splitlines()
    assert lines[:3] == ["- Searched vault notes: every folder (4).", "- All folders counted equally.",
                         "- Best passages:"]
    assert lines[3] == "  1. projects/alpha.md — Alpha › Timeline (found by both word and meaning search)"
    assert len([line for line in lines if re.match(r"  \d\. ", line)]) == 5
    assert lines[-2] == "- The answer draws on up to 5 passages."
    assert lines[-1].startswith("- Decision: answered: the evidence is strong enough (confidence ")
    assert not JARGON.search(out), JARGON.search(out)


def test_explain_names_the_folders_searched_and_why_it_abstained(vault, capsys):
    code, out, _ = run_in_process(capsys, "ask", QUESTION, "--explain", "--folder", "projects", "--folder", "meetings")
    assert code == 0
    why = out.partition("\n\nWhy this answer:\n")[2].splitlines()
    assert why[0] == "- Searched vault notes: only the folders you named (notes/projects/**, notes/meetings/**)."
    assert all(re.match(r"  \d\. (projects|meetings)/", line) for line in why if line.startswith("  "))
    code, out, _ = run_in_process(capsys, "ask", ZEBRA, "--explain")
    assert code == 0
    assert out.startswith("Answer:\nI could not find this information in the available documents.\n\nWhy this answer:")
    decision = out.splitlines()[-1]
    assert decision.startswith("- Decision: not answered: the evidence is too weak")
    assert "never appear in the notes" in decision and "(found by meaning search only)" in out


def test_explain_with_json_adds_an_explanation_list(vault, capsys):
    code, out, _ = run_in_process(capsys, "ask", QUESTION, "--explain", "--json")
    assert code == 0
    data = json.loads(out)
    assert "debug" not in data and isinstance(data["explanation"], list)
    assert data["explanation"][0] == "Searched vault notes: every folder (4)."
    assert data["explanation"][-1].startswith("Decision: answered:")
    assert "  1. projects/alpha.md — Alpha › Timeline (found by both word and meaning search)" in data["explanation"]
    code, out, _ = run_in_process(capsys, "ask", QUESTION, "--explain", "--json", "--debug")
    data = json.loads(out)
    assert data["explanation"] and data["debug"]["decision"]["abstain"] is False
    code, out, _ = run_in_process(capsys, "ask", QUESTION, "--json")
    assert "explanation" not in json.loads(out)


def test_ask_json_and_debug(vault, capsys):
    code, out, _ = run_in_process(capsys, "ask", QUESTION, "--json", "--debug", "--detail", "brief")
    assert code == 0
    data = json.loads(out)
    assert data["abstained"] is False and data["answered_by"] == "extractive" and data["confidence"] == "normal"
    # the response keeps the one citation form (the web page and MCP read it); the terminal numbers it
    assert data["answer"] == TIMELINE.replace("[1]", "[File: alpha.md, Section: Timeline]")
    assert data["references"][0]["source_path"] == "projects/alpha.md"
    assert data["decision"]["abstain"] is False and data["decision"]["rule"] == "model"
    assert data["decision"]["evidence_vault"] == "notes"
    assert {"vault", "source_path", "heading_path", "ordinal", "lines", "snippet"} <= set(data["references"][0])
    assert data["debug"]["k"]["value"] == 3
    assert data["debug"]["scope"]["folders"]["searched"] == ["notes/meetings", "notes/ops", "notes/projects",
                                                             "notes/recipes"]
    assert all({"vector", "lexical", "final", "found_by"} <= set(c) for c in data["debug"]["candidates"])
    assert tuple(data["debug"]["decision"]["signals"]) == SIGNALS


def test_ask_human_debug_goes_to_stderr(vault, capsys):
    code, out, err = run_in_process(capsys, "ask", QUESTION, "--debug", "--folder", "projects")
    assert code == 0 and out.startswith("Answer:\n") and not JARGON.search(out)
    debug = json.loads(err)
    assert debug["scope"]["folders"]["restricted_to"] == ["notes/projects/**"]
    assert {c["path"].split("/")[0] for c in debug["candidates"]} == {"projects"}


def llm_env(monkeypatch, stub) -> None:
    monkeypatch.setenv("RAGPG_LLM__MODEL", "openai/stub")
    monkeypatch.setenv("RAGPG_LLM__API_BASE", f"{stub.url}/v1")
    monkeypatch.setenv("RAGPG_LLM__API_KEY", "sk-test")


def test_ask_with_llm_cites_sources(vault, capsys, llm_stub, monkeypatch):
    llm_env(monkeypatch, llm_stub)
    script(llm_stub, folders='["notes/projects", "notes/meetings"]',
           answer="The alpha project ships in March [File: alpha.md, Section: Timeline], as agreed in the "
                  "weekly meeting [File: 2024-05-01.md, Section: Weekly meeting].")
    code, out, err = run_in_process(capsys, "ask", QUESTION, "--detail", "brief")
    assert code == 0, err
    assert NOTICE_NO_LLM not in out
    # the model's citations are numbered as a quoted answer's are, each by its place in Sources
    assert out.startswith("Answer:\nThe alpha project ships in March [1], as agreed in the weekly meeting [2].\n")
    # brief lists one source, but every passage the answer cites is listed
    assert [line.split(" — ")[0] for line in parts(out)[1]] == ["[1] projects/alpha.md", "[2] meetings/2024-05-01.md"]
    assert not JARGON.search(out)
    code, printed, _ = run_in_process(capsys, "ask", QUESTION, "--detail", "brief", "--json")  # the response keeps
    assert json.loads(printed)["answer"].startswith("The alpha project ships in March [File: alpha.md, Section: Tim")


def test_ask_with_llm_declining_abstains(vault, capsys, llm_stub, monkeypatch):
    llm_env(monkeypatch, llm_stub)
    script(llm_stub, answer="I could not find this information in the available documents.")
    code, out, _ = run_in_process(capsys, "ask", QUESTION, "--json")
    data = json.loads(out)
    assert (data["abstained"], data["decision"]["rule"], data["answered_by"], data["references"]) == (
        True, "llm_declined", "llm", [])
    assert "abstain_reason" not in data
    code, out, _ = run_in_process(capsys, "ask", QUESTION, "--explain")
    assert out.splitlines()[-1] == ("- Decision: not answered: the language model found no answer in the "
                                    "passages.")


def test_ask_with_llm_down_still_answers_cleanly(vault, capsys, llm_stub, monkeypatch):
    llm_env(monkeypatch, llm_stub)
    llm_stub.fail_status = 500
    code, out, _ = run_in_process(capsys, "ask", QUESTION)
    assert code == 0
    assert out.startswith("Answer:\n(The language model could not be reached, so this answer quotes your notes "
                          f"directly.)\n{TIMELINE}\n")
    assert "LiteLLM" not in out and "Give Feedback" not in out and not JARGON.search(out)


def test_search_human_and_json(vault, capsys):
    code, out, _ = run_in_process(capsys, "search", "alpha deploy servers", "--k", "3", "--passages")
    assert code == 0
    assert out.startswith("1. ops/deploy.md Deploy (lines ")  # the heading as its reader sees it
    assert len(re.findall(r"^\d\. ", out, re.MULTILINE)) == 3
    assert "AKIAIOSFODNN7EXAMPLE" not in out and "REDACTED" in out
    code, out, _ = run_in_process(capsys, "search", "alpha deploy servers", "--k", "3")  # by note
    names = re.findall(r"^\d\. (\S+)$", out, re.MULTILINE)
    assert code == 0 and names[0] == "ops/deploy.md" and len(names) == len(set(names)) == 3
    assert re.search(r"^   - Deploy \(lines \d+-\d+\)$", out, re.MULTILINE)
    code, out, _ = run_in_process(capsys, "search", "alpha deploy servers", "--json")
    found = json.loads(out)
    assert found["by"] == "note" and len({n["source_path"] for n in found["notes"]}) == len(found["notes"])
    assert found["items"] == [p for n in found["notes"] for p in n["passages"]]
    code, out, _ = run_in_process(capsys, "search", "alpha", "--folder", "projects", "--json", "--passages")
    items = json.loads(out)["items"]
    assert items and {i["source_path"] for i in items} == {"projects/alpha.md", "projects/alpha-risks.md"}
    assert {"vault", "source_path", "heading_path", "ordinal", "start_line", "end_line", "snippet",
            "score"} <= set(items[0])
    assert [i["score"] for i in items] == sorted((i["score"] for i in items), reverse=True)
    code, out, _ = run_in_process(capsys, "search", "zebra quantum soup", "--folder", "recipes")
    assert out.startswith("1. recipes/soup.md")  # one word of the notes: every passage in scope is ranked
    code, out, _ = run_in_process(capsys, "search", "zebra quantum volcano", "--folder", "recipes")
    assert code == 0 and out.strip() == "Nothing in your notes matches this search."  # no word, no meaning


@pytest.mark.parametrize(("args", "code", "message"), [
    (["ask", "  "], 2, "error: the question is empty"),
    (["ask", QUESTION, "--vault", "nope"], 4, "error: unknown vault 'nope' (known: empty, notes)"),
    (["ask", QUESTION, "--folder", "projcts"], 4, "error: no folder named 'projcts' in notes; did you mean: projects"),
    (["ask", QUESTION, "--folder", "meetngs", "--explain"], 4, "did you mean: meetings"),
    (["ask", QUESTION, "--detail", "verbose"], 2, "error: detail must be one of: brief, normal, detailed"),
    (["ask", QUESTION, "--detail", "verbose", "--json"], 2, "error: detail must be one of: brief, normal, detailed"),
    (["ask", QUESTION, "--vault", "empty"], 4, "nothing is indexed in vault 'empty' yet: run `ragpg index`"),
    (["search", QUESTION, "--k", "0"], 2, "error: k must be a whole number between 1 and 100"),
    (["search", "", "--vault", "notes"], 2, "error: the search query is empty"),
    (["search", QUESTION, "--folder", "projcts"], 4, "did you mean: projects"),
])
def test_bad_input_one_line_on_stderr(vault, tmp_path, capsys, args, code, message):
    (tmp_path / "empty").mkdir()
    assert run_in_process(capsys, "vault", "add", "empty", str(tmp_path / "empty"))[0] == 0
    got, out, err = run_in_process(capsys, *args)
    assert got == code and out == ""
    assert message in err and len(err.strip().splitlines()) == 1
    # nothing lost: the vault still answers
    assert "projects/alpha.md" in run_in_process(capsys, "ask", QUESTION)[1]


def test_real_console_script(vault, cli_env):
    result = ragpg("ask", QUESTION, "--json", env=cli_env)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["references"][0]["source_path"] == "projects/alpha.md"


def ref(vault: str, path: str, heading: str, ordinal: int, start: int, end: int) -> Reference:
    return Reference(vault=vault, source_path=path, heading_path=heading, ordinal=ordinal, start_line=start,
                     end_line=end, snippet="")


DECIDED = AnswerDecision(abstain=False, rule="model", evidence_vault="v")


def test_sources_are_deduplicated_by_source_and_location_and_name_their_heading():
    refs = [ref("v", "a.md", "# A", 0, 1, 4), ref("v", "a.md", "# A", 0, 1, 4),
            ref("v", "a.md", "# A > ## B", 1, 6, 9), ref("v", "b.md", "", 0, 3, 3)]
    assert source_lines(refs) == ["- a.md — A (lines 1-4)", "- a.md — A › B (lines 6-9)", "- b.md (line 3)"]
    two_vaults = [ref("v", "a.md", "", 0, 1, 2), ref("w", "a.md", "", 0, 1, 2)]
    assert source_lines(two_vaults) == ["- v: a.md (lines 1-2)", "- w: a.md (lines 1-2)"]
    abstained = AskResponse(answer="I could not find this information in the available documents.", references=[],
                            abstained=True, decision=DECIDED.model_copy(update={"abstain": True}), answered_by="none")
    assert render_answer(abstained) == "Answer:\nI could not find this information in the available documents."


def test_ask_abstains_in_plain_words(vault, capsys):
    code, out, err = run_in_process(capsys, "ask", ZEBRA)
    assert code == 0 and err == ""
    assert out == "Answer:\nI could not find this information in the available documents.\n"
    code, out, _ = run_in_process(capsys, "ask", ZEBRA, "--json")
    data = json.loads(out)
    assert (data["abstained"], data["decision"]["rule"], data["references"]) == (True, "model", [])
    assert data["answer"] == "I could not find this information in the available documents."


def test_low_confidence_answer_says_so_plainly():
    one = ref("v", "a.md", "A", 0, 1, 4)
    low = AskResponse(answer="Alpha ships in March. [File: a.md, Section: A]", references=[one], abstained=False,
                      decision=DECIDED, answered_by="extractive", notice=NOTICE_NO_LLM, confidence="low")
    text = render_answer(low)
    assert text.splitlines()[1:3] == [f"({NOTICE_NO_LLM})", f"({LOW_CONFIDENCE_NOTE})"]
    assert not JARGON.search(text)
    normal = AskResponse(answer="Alpha ships in March.", references=[one], abstained=False, decision=DECIDED,
                         confidence="normal")
    assert LOW_CONFIDENCE_NOTE not in render_answer(normal)
