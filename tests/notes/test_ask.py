"""`rag.notes.ask` against real Postgres, with exact embeddings (kit.toward) and the litellm stub server.

Abstention uses the tests' own model (kit.ABSTAIN, through `use_settings` / the `notes_config`
fixture): the default weights are refitted on the golden set and no test depends on them."""

from __future__ import annotations

import re

import pytest

from rag.access import Scope
from rag.config_profiles import BUILTIN_PROFILES
from rag.errors import AuthError, InputError, NotFoundError
from rag.notes.answer import NOTICE_LLM_FAILED, NOTICE_NO_LLM, caution
from rag.notes.ask import ABSTAIN_ANSWER, ask, search
from rag.notes.decision import explanation
from rag.retrieval.rank import FRESHNESS_UNKNOWN
from tests.notes.conftest import FOLDER_PROMPT_MARK, answer_prompts, ask_module, script, use_settings
from tests.notes.kit import ABSTAIN, toward
from tests.support.ask_trace import trace_json

Q = "When does project alpha ship?"  # content terms: project, alpha, ship
OFF_TOPIC = "Gardening notes about tomatoes and basil."  # no term of Q
ZEBRA = "Which zebra crossed the quantum volcano yesterday?"  # no word of it in any note


def by_path(resp):
    return {c["path"]: c for c in trace_json(resp)["candidates"]}


def notes_profile_final(similarity: float, lexical: float, prior: float = 1.0) -> float:
    """The notes profile's final score (rag.retrieval.rank): w_cosine * cosine + w_bm25 * BM25 share + w_freshness
    * freshness (undated: 0.5), times the prior; the weights are the built-in notes profile's."""
    p = BUILTIN_PROFILES["notes"]
    return (p.w_cosine * similarity + p.w_bm25 * lexical + p.w_freshness * FRESHNESS_UNKNOWN) * prior


def two_notes(notes):
    q = notes.query_vector(Q)
    notes.note("work", "projects/alpha.md",
               [("# Alpha > ## Timeline", "Project alpha ships in March after the beta review."),
                ("# Alpha > ## Budget", "Alpha has a budget of forty thousand.")],
               embeddings=[toward(q, 0.8, 1), toward(q, 0.7, 2)])
    notes.note("work", "projects/beta.md", [("# Beta", "Project beta follows alpha.")], embeddings=[toward(q, 0.6, 3)])


def three_folders(notes, sims=(0.8, 0.8, 0.8)):
    q = notes.query_vector(Q)
    notes.note("work", "projects/alpha.md", [("# Status", OFF_TOPIC)], embeddings=[toward(q, sims[0], 1)])
    notes.note("work", "meetings/m1.md", [("# Minutes", OFF_TOPIC)], embeddings=[toward(q, sims[1], 2)])
    notes.note("work", "recipes/soup.md", [("# Soup", OFF_TOPIC)], embeddings=[toward(q, sims[2], 3)])


# -- answering and abstaining -------------------------------------------------------------------------

def test_answers_from_the_passage_that_says_it(notes, runtime, notes_config):
    two_notes(notes)
    resp = ask(Q, debug=True, runtime=runtime)
    assert not resp.abstained and not resp.decision.abstain
    assert resp.answered_by == "extractive" and resp.notice == NOTICE_NO_LLM and resp.confidence == "normal"
    assert resp.answer.splitlines()[0] == ("Project alpha ships in March after the beta review. "
                                           "[File: alpha.md, Section: Timeline]")
    assert resp.references[0].source_path == "projects/alpha.md" and resp.references[0].heading_path == "# Alpha > ## Timeline"
    first = trace_json(resp)["candidates"][0]
    # the best BM25 match gets lexical 1.0; no folder prior (weight 0)
    assert (first["rank"], first["path"], first["found_by"], first["folder_prior"]) == (1, "projects/alpha.md",
                                                                                        "both", 1.0)
    assert first["vector"] == pytest.approx(0.8, abs=1e-5) and first["lexical"] == 1.0
    assert first["final"] == pytest.approx(notes_profile_final(0.8, 1.0), abs=1e-5)
    assert trace_json(resp)["decision"]["abstain"] is False


def test_a_question_in_words_the_notes_never_use_abstains(notes, runtime, notes_config):
    # embeddings from the text itself (the hash embedder), as indexing stores them
    notes.note("work", "projects/alpha.md", [("# Alpha > ## Timeline", "Project alpha ships in March."),
                                             ("# Alpha > ## Budget", "Alpha has a budget of forty thousand.")])
    notes.note("work", "garden/plants.md", [("# Plants", OFF_TOPIC)])
    resp = ask(ZEBRA, debug=True, runtime=runtime)
    assert resp.abstained and resp.decision.rule == "model"
    assert resp.answer == ABSTAIN_ANSWER and resp.references == []
    assert resp.answered_by == "none" and resp.confidence is None and resp.notice is None
    decision = trace_json(resp)["decision"]
    assert decision["abstain"] and decision["p_answerable"] < 0.5
    assert decision["signals"]["unknown_share"] == 1.0 and decision["signals"]["term_coverage"] == 0.0
    assert "never appear in the notes" in explanation(resp.decision)
    assert trace_json(resp)["candidates"]  # passages were found; they do not answer
    assert trace_json(resp)["timings_ms"]["answer_ms"] > 0  # deciding is timed on this path too
    # no quote to make: sentences are scored only when a signal with a weight reads them
    weighed = bool(notes_config.abstain_weights.get("sentence_similarity"))
    assert resp.debug is not None and (resp.debug.sentences_scored > 0) == weighed
    # the note answers this one in the same words
    same = ask("When does project alpha ship?", debug=True, runtime=runtime)
    assert not same.abstained and trace_json(same)["decision"]["signals"]["unknown_share"] == 0.0
    assert same.answer.startswith("Project alpha ships in March. [File: alpha.md, Section: Timeline]")
    assert same.debug is not None and same.debug.sentences_scored > 0  # the quoted answer needed them


def test_the_decision_follows_the_settings(notes, runtime, monkeypatch):
    two_notes(notes)
    use_settings(monkeypatch, abstain_bias=-20.0)  # no evidence is strong enough
    resp = ask(Q, debug=True, runtime=runtime)
    assert resp.abstained and resp.decision.rule == "model"
    use_settings(monkeypatch, abstain_bias=20.0)  # any evidence is
    assert not ask(ZEBRA, runtime=runtime).abstained


def test_abstains_when_nothing_matches_at_all(notes, runtime, notes_config):
    notes.note("work", "garden/plants.md", [("# Plants", OFF_TOPIC)], embed=False)  # no vector, no shared word
    resp = ask(Q, debug=True, runtime=runtime)
    assert resp.abstained and resp.decision.rule == "nothing_found"
    assert resp.answer == ABSTAIN_ANSWER and resp.references == []
    assert trace_json(resp)["candidates"] == [] and trace_json(resp)["retrieval"]["insufficient"] is True
    assert explanation(resp.decision) == "not answered: nothing in the notes matched"


def test_low_confidence_asks_the_llm_for_a_cautious_answer(notes, llm_runtime, llm_stub, monkeypatch):
    two_notes(notes)
    use_settings(monkeypatch, abstain_low_confidence=0.999999)
    script(llm_stub, answer="Alpha ships in March [File: alpha.md, Section: Timeline].")
    resp = ask(Q, runtime=llm_runtime)
    assert resp.confidence == "low" and not resp.abstained
    assert caution().strip() in answer_prompts(llm_stub)[-1]
    use_settings(monkeypatch)
    assert ask(Q, runtime=llm_runtime).confidence == "normal"
    assert caution().strip() not in answer_prompts(llm_stub)[-1]


# -- folders: a prior, never a blindfold ------------------------------------------------------------

def archive_far_better(notes):
    """projects and meetings: passages at 0.5; archive: the one passage that answers (0.95, and
    the question's words) among five far-off ones, so its centroid ranks it last."""
    q = notes.query_vector(Q)
    notes.note("work", "projects/a.md", [("# A", OFF_TOPIC)], embeddings=[toward(q, 0.5, 1)])
    notes.note("work", "projects/b.md", [("# B", OFF_TOPIC)], embeddings=[toward(q, 0.5, 2)])
    notes.note("work", "meetings/m.md", [("# M", OFF_TOPIC)], embeddings=[toward(q, 0.5, 3)])
    notes.note("work", "archive/best.md", [("# Best", "Project alpha ships in March.")],
               embeddings=[toward(q, 0.95, 4)])
    for i in range(5):
        notes.note("work", f"archive/old{i}.md", [("# Old", OFF_TOPIC)], embeddings=[toward(q, -0.3, 10 + i)])


def candidate_refs(resp):
    return {(c["path"], c["ordinal"]) for c in trace_json(resp)["candidates"]}


def test_without_a_prior_weight_no_folder_ranking_happens(notes, runtime, notes_config):
    assert notes_config.folder_prior_weight == 0.0  # the default: the eval gave the centroid prior no weight
    archive_far_better(notes)
    resp = ask(Q, debug=True, runtime=runtime)
    folders = trace_json(resp)["scope"]["folders"]
    assert folders["method"] == "none" and folders["selected"] == [] and folders["prior_weight"] == 0.0
    assert folders["searched"] == ["work/archive", "work/meetings", "work/projects"]
    assert {c["folder_prior"] for c in trace_json(resp)["candidates"]} == {1.0}


def test_the_lowest_ranked_folder_is_still_searched_and_can_rank_first(notes, runtime, monkeypatch):
    archive_far_better(notes)
    use_settings(monkeypatch)
    unweighted = ask(Q, debug=True, runtime=runtime)
    use_settings(monkeypatch, folder_prior_weight=0.5)
    resp = ask(Q, debug=True, runtime=runtime)
    folders = trace_json(resp)["scope"]["folders"]
    assert folders["method"] == "centroid" and folders["prior_weight"] == 0.5
    assert [(s["folder"], s["weight"]) for s in folders["selected"]] == [
        ("work/projects", 1.0), ("work/meetings", 0.9), ("work/archive", 0.8)]
    assert folders["searched"] == ["work/archive", "work/meetings", "work/projects"]
    assert candidate_refs(resp) == candidate_refs(unweighted)  # the prior moved scores, dropped nothing
    best = trace_json(resp)["candidates"][0]
    assert best["path"] == "archive/best.md" and best["folder_prior"] == pytest.approx(0.5 + 0.5 * 0.8)
    assert best["final"] == pytest.approx(notes_profile_final(0.95, 1.0, 0.9), abs=1e-5)
    assert resp.references[0].source_path == "archive/best.md"


def test_a_heavy_prior_pushes_the_last_folder_down_but_never_out(notes, runtime, monkeypatch):
    archive_far_better(notes)
    use_settings(monkeypatch)
    unweighted = ask(Q, debug=True, runtime=runtime)
    use_settings(monkeypatch, folder_prior_weight=1.0, folder_weight_step=0.45, folder_weight_min=0.1)
    resp = ask(Q, debug=True, runtime=runtime)
    assert [s["weight"] for s in trace_json(resp)["scope"]["folders"]["selected"]] == [1.0, 0.55, 0.1]
    assert candidate_refs(resp) == candidate_refs(unweighted)
    best = by_path(resp)["archive/best.md"]
    assert best["folder_prior"] == pytest.approx(0.1) and best["rank"] > 1
    assert "archive/best.md" in {i.source_path for i in search(Q, k=20, runtime=runtime).items}


def test_folders_the_llm_did_not_list_are_still_searched_at_the_minimum_weight(notes, llm_runtime, llm_stub,
                                                                                monkeypatch):
    use_settings(monkeypatch, folder_prior_weight_llm=0.3)
    three_folders(notes)
    script(llm_stub, folders='```json\n["work/meetings", "work/recipes"]\n```', answer="ok")
    resp = ask(Q, debug=True, runtime=llm_runtime)
    folders = trace_json(resp)["scope"]["folders"]
    assert folders["method"] == "llm" and folders["prior_weight"] == 0.3
    assert [(s["folder"], s["source"], s["weight"]) for s in folders["selected"]] == [
        ("work/meetings", "llm", 1.0), ("work/recipes", "llm", 0.9)]
    cands = by_path(resp)
    assert set(cands) == {"projects/alpha.md", "meetings/m1.md", "recipes/soup.md"}
    assert cands["meetings/m1.md"]["folder_prior"] == pytest.approx(1.0)
    assert cands["recipes/soup.md"]["folder_prior"] == pytest.approx(0.7 + 0.3 * 0.9)
    assert cands["projects/alpha.md"]["folder_prior"] == pytest.approx(0.7 + 0.3 * 0.1)  # not listed: the minimum
    assert [c["path"] for c in trace_json(resp)["candidates"]] == ["meetings/m1.md", "recipes/soup.md", "projects/alpha.md"]
    prompt = next(r["messages"][-1]["content"] for r in llm_stub.requests
                  if FOLDER_PROMPT_MARK in r["messages"][-1]["content"])
    assert "work/meetings\nwork/projects\nwork/recipes" in prompt


def test_malformed_llm_folder_answer_weighs_by_centroid_and_searches_everything(notes, llm_runtime, llm_stub,
                                                                               monkeypatch):
    three_folders(notes, sims=(0.5, 0.9, 0.7))
    script(llm_stub, folders="I would look in projects first.", answer="ok")
    # the centroid order the ranking falls back to weighs what a centroid order weighs, not the LLM's weight
    use_settings(monkeypatch, folder_prior_weight_llm=0.3, folder_prior_weight=0.2)
    resp = ask(Q, debug=True, runtime=llm_runtime)
    folders = trace_json(resp)["scope"]["folders"]
    assert folders["method"] == "all" and "not a JSON array" in folders["notes"][0]
    assert [s["folder"] for s in folders["selected"]] == ["work/meetings", "work/recipes", "work/projects"]
    assert folders["prior_weight"] == 0.2
    assert by_path(resp)["projects/alpha.md"]["folder_prior"] == pytest.approx(0.8 + 0.2 * 0.8)
    assert set(by_path(resp)) == {"projects/alpha.md", "meetings/m1.md", "recipes/soup.md"}
    use_settings(monkeypatch, folder_prior_weight_llm=0.3, folder_prior_weight=0.0)
    unweighted = ask(Q, debug=True, runtime=llm_runtime)
    assert trace_json(unweighted)["scope"]["folders"]["prior_weight"] == 0.0
    assert {c["folder_prior"] for c in trace_json(unweighted)["candidates"]} == {1.0}


def test_llm_naming_only_unknown_folders_searches_everything(notes, llm_runtime, llm_stub, notes_config):
    three_folders(notes)
    script(llm_stub, folders='["work/archive", "elsewhere"]', answer="ok")
    resp = ask(Q, debug=True, runtime=llm_runtime)
    folders = trace_json(resp)["scope"]["folders"]
    assert folders["method"] == "all" and len(folders["selected"]) == 3
    assert any("unknown folders" in n for n in folders["notes"])
    assert len(trace_json(resp)["candidates"]) == 3


def test_without_centroids_folders_are_weighed_in_name_order(notes, runtime, monkeypatch):
    from rag.errors import DatabaseError

    use_settings(monkeypatch, folder_prior_weight=0.5)
    three_folders(notes, sims=(0.5, 0.2, 0.9))

    def unavailable(*_args, **_kwargs):
        raise DatabaseError("match_folders is missing")

    monkeypatch.setattr("rag.retrieval.retrieve.match_folders", unavailable)
    resp = ask(Q, debug=True, runtime=runtime)
    folders = trace_json(resp)["scope"]["folders"]
    assert folders["method"] == "all" and "folder centroids unavailable" in folders["notes"][0]
    assert [s["folder"] for s in folders["selected"]] == ["work/meetings", "work/projects", "work/recipes"]
    assert len(trace_json(resp)["candidates"]) == 3


# -- folders the user names restrict the search -------------------------------------------------------

def test_user_folders_restrict_the_search(notes, runtime, notes_config):
    three_folders(notes, sims=(0.5, 0.9, 0.9))
    resp = ask(Q, folders=["projects"], debug=True, runtime=runtime)
    assert set(by_path(resp)) == {"projects/alpha.md"}
    folders = trace_json(resp)["scope"]["folders"]
    assert folders["restricted_to"] == ["work/projects/**"] and folders["searched"] == ["work/projects"]
    assert trace_json(resp)["k"]["value"] == 4  # normal 5, a user folder -1
    assert {i.source_path for i in search(Q, folders=["projects"], runtime=runtime).items} == {"projects/alpha.md"}


def test_vault_qualified_user_folder_and_several_vaults(notes, runtime, notes_config):
    q = notes.query_vector(Q)
    notes.note("work", "projects/alpha.md", [("# Alpha", OFF_TOPIC)], embeddings=[toward(q, 0.8, 1)])
    notes.note("home", "projects/house.md", [("# House", OFF_TOPIC)], embeddings=[toward(q, 0.9, 2)])
    resp = ask(Q, folders=["work/projects"], debug=True, runtime=runtime)
    assert set(by_path(resp)) == {"projects/alpha.md"} and {c["vault"] for c in trace_json(resp)["candidates"]} == {"work"}
    both = ask(Q, folders=["projects"], debug=True, runtime=runtime)
    assert {(c["vault"], c["path"]) for c in trace_json(both)["candidates"]} == {("work", "projects/alpha.md"),
                                                                          ("home", "projects/house.md")}
    only_home = ask(Q, vaults=["home"], debug=True, runtime=runtime)
    assert trace_json(only_home)["scope"]["vaults"] == ["home"] and trace_json(only_home)["scope"]["folders"]["searched"] == ["home/projects"]
    assert {c["vault"] for c in trace_json(only_home)["candidates"]} == {"home"}


def test_overlapping_and_prefix_user_folders(notes, runtime, notes_config):
    q = notes.query_vector(Q)
    notes.note("j", "2024-01/a.md", [("# A", OFF_TOPIC)], embeddings=[toward(q, 0.8, 1)])
    notes.note("j", "2024-02/week1/b.md", [("# B", OFF_TOPIC)], embeddings=[toward(q, 0.7, 2)])
    notes.note("j", "2023-12/c.md", [("# C", OFF_TOPIC)], embeddings=[toward(q, 0.9, 3)])
    prefix = ask(Q, folders=["2024-"], debug=True, runtime=runtime)
    assert trace_json(prefix)["scope"]["folders"]["restricted_to"] == ["j/2024-*"]
    assert set(by_path(prefix)) == {"2024-01/a.md", "2024-02/week1/b.md"}
    overlapping = ask(Q, folders=["2024-02", "2024-02/week1"], debug=True, runtime=runtime)
    assert [c["path"] for c in trace_json(overlapping)["candidates"]] == ["2024-02/week1/b.md"]


def test_unknown_folder_names_close_matches(notes, runtime, notes_config):
    three_folders(notes)
    with pytest.raises(InputError, match=r"no folder named 'projcts' in work; did you mean: projects"):
        ask(Q, folders=["projcts"], runtime=runtime)
    with pytest.raises(InputError, match=r"no folder named 'meting' .*did you mean: meetings"):
        search(Q, folders=["meting"], runtime=runtime)


# -- with a language model ----------------------------------------------------------------------------

def test_sentences_are_never_embedded_when_an_llm_answers_and_their_signal_weighs_nothing(
        notes, llm_runtime, llm_stub, monkeypatch):
    two_notes(notes)
    embedded: list[list[str]] = []
    real = llm_runtime.embedder.embed_sentences

    def counting(texts: list[str]) -> list[list[float]]:  # the real embedder, with its calls counted
        embedded.append(list(texts))
        return real(texts)

    monkeypatch.setattr(llm_runtime.embedder, "embed_sentences", counting)
    weights = {k: v for k, v in ABSTAIN["abstain_weights"].items() if k != "sentence_similarity"}
    use_settings(monkeypatch, abstain_weights=weights)
    script(llm_stub, answer="Alpha ships in March [File: alpha.md, Section: Timeline].")
    resp = ask(Q, debug=True, runtime=llm_runtime)
    assert resp.answered_by == "llm" and not resp.abstained
    assert embedded == [] and resp.debug is not None and resp.debug.sentences_scored == 0
    assert "sentence_similarity" not in resp.decision.signals  # not read, not reported as 0
    # a quoted answer needs them: the LLM failing, they are scored then, once
    llm_stub.fail_status = 500
    quoted = ask(Q, debug=True, runtime=llm_runtime)
    assert quoted.answered_by == "extractive" and embedded and quoted.debug is not None
    assert quoted.debug.sentences_scored > 0
    # and a weight that reads them has them scored before the decision, an LLM configured or not
    use_settings(monkeypatch)
    embedded.clear()
    llm_stub.fail_status = None
    script(llm_stub, answer="Alpha ships in March [File: alpha.md, Section: Timeline].")
    weighed = ask(Q, runtime=llm_runtime)
    assert weighed.answered_by == "llm" and embedded and "sentence_similarity" in weighed.decision.signals


def test_references_are_the_passages_the_llm_answer_cites(notes, llm_runtime, llm_stub, notes_config):
    two_notes(notes)
    script(llm_stub, answer="Alpha ships in March [File: alpha.md, Section: Timeline] "
                            "as planned [File: gamma.md, Section: Plans].")
    resp = ask(Q, detail="brief", debug=True, runtime=llm_runtime)
    assert resp.answered_by == "llm" and resp.notice is None and not resp.abstained
    assert [(r.source_path, r.heading_path, r.ordinal) for r in resp.references] == [
        ("projects/alpha.md", "# Alpha > ## Timeline", 0)]
    ref = resp.references[0].to_dict()
    assert ref["lines"] == "1" and ref["snippet"].startswith("Project alpha ships")
    assert trace_json(resp)["citations"]["unmatched_citations"] == ["[File: gamma.md, Section: Plans]"]
    system, user = llm_stub.requests[-1]["messages"]
    assert system["role"] == "system" and "only the user's own notes" in system["content"]
    # the context is assembled like any (rag.context.assemble): each block under the label it is cited by
    assert "[File: alpha.md, Section: Timeline]\nProject alpha ships in March after the beta review." in user["content"]
    assert "[File: beta.md, Section: Beta]\nProject beta follows alpha." in user["content"]
    assert user["content"].rstrip().endswith(f"Question: {Q}")


def test_only_cited_passages_are_sources_up_to_the_detail(notes, llm_runtime, llm_stub, notes_config):
    two_notes(notes)
    script(llm_stub, answer="Beta follows alpha [File: beta.md, Section: Beta].")
    resp = ask(Q, detail="normal", runtime=llm_runtime)  # up to 3 sources, but only beta was taken from
    assert [(r.source_path, r.ordinal) for r in resp.references] == [("projects/beta.md", 0)]
    script(llm_stub, answer="Alpha ships in March.")  # cites nothing: the passages drawn on, in rank order
    # (alpha#1 at cosine 0.7 outranks beta at 0.6 under the notes profile's weights)
    assert [(r.source_path, r.ordinal) for r in ask(Q, detail="normal", runtime=llm_runtime).references] == [
        ("projects/alpha.md", 0), ("projects/alpha.md", 1), ("projects/beta.md", 0)]


@pytest.mark.parametrize("declined", [
    "I could not find this information in the available documents.",
    "I could not find this information in the available documents",
    "  I could not find this information in the available   documents. The notes only discuss the budget.",
    # the same sentence dressed up as models do: bold, quoted, labelled, contracted
    "**I could not find this information in the available documents.**",
    "\"I could not find this information in the available documents.\"",
    "Answer: I could not find this information in the available documents.",
    "I couldn't find this information in the available documents.",
])
def test_the_llm_declining_is_an_abstention(notes, llm_runtime, llm_stub, notes_config, declined):
    two_notes(notes)
    script(llm_stub, answer=declined)
    resp = ask(Q, debug=True, runtime=llm_runtime)
    assert resp.abstained and resp.decision.rule == "llm_declined" and resp.answered_by == "llm"
    assert resp.answer == ABSTAIN_ANSWER and resp.references == []
    assert trace_json(resp)["decision"]["abstain"] is True
    assert explanation(resp.decision) == "not answered: the language model found no answer in the passages"
    assert trace_json(resp)["decision"]["p_answerable"] >= 0.5  # the evidence alone would have answered


def test_an_answer_merely_mentioning_the_phrase_is_not_a_decline(notes, llm_runtime, llm_stub, notes_config):
    two_notes(notes)
    script(llm_stub, answer="Alpha ships in March [File: alpha.md, Section: Timeline]. "
                            "I could not find this information in the available documents for beta.")
    resp = ask(Q, runtime=llm_runtime)
    assert not resp.abstained and resp.answered_by == "llm"


def test_llm_down_means_a_quoted_answer_with_a_notice(notes, llm_runtime, llm_stub, notes_config):
    two_notes(notes)
    notes.note("work", "garden/plants.md", [("# Plants", OFF_TOPIC)], embeddings=[toward(notes.query_vector(Q), 0.4, 9)])
    llm_stub.fail_status = 500
    resp = ask(Q, debug=True, runtime=llm_runtime)
    assert not resp.abstained and resp.answered_by == "extractive" and resp.notice == NOTICE_LLM_FAILED
    assert resp.answer.splitlines()[0] == ("Project alpha ships in March after the beta review. "
                                           "[File: alpha.md, Section: Timeline]")
    assert "error" in trace_json(resp)["llm"]
    assert trace_json(resp)["scope"]["folders"]["method"] == "all" and "failed" in trace_json(resp)["scope"]["folders"]["notes"][0]
    assert trace_json(resp)["scope"]["folders"]["prior_weight"] == notes_config.folder_prior_weight == 0.0  # no LLM order
    assert {c["folder"] for c in trace_json(resp)["candidates"]} == {"projects", "garden"}  # every folder searched


# -- K: how many passages an answer draws on ----------------------------------------------------------

def ten_passages(notes, question=Q, vault="work"):
    q = notes.query_vector(question)
    for i in range(10):
        notes.note(vault, f"projects/n{i}.md", [("# N", f"Project alpha note {i} says it ships soon.")],
                   embeddings=[toward(q, 0.9 - 0.01 * i, i)])


def context_chunks(stub) -> int:
    """The passages (context blocks) the last answering prompt showed, each under its own label."""
    return len(re.findall(r"^\[File: n\d\.md, Section: N\]$", answer_prompts(stub)[-1], re.MULTILINE))


def test_auto_k_is_the_number_of_passages_the_llm_sees(notes, llm_runtime, llm_stub, notes_config):
    ten_passages(notes)
    script(llm_stub, answer="Soon [File: n0.md, Section: N].")
    for detail, k in (("brief", 3), ("normal", 5), ("detailed", 8)):
        resp = ask(Q, detail=detail, debug=True, runtime=llm_runtime)
        assert trace_json(resp)["k"]["value"] == k and context_chunks(llm_stub) == k
        assert len(trace_json(resp)["candidates"]) == 10  # ranked: all; drawn on: the best k
    broad_q = "When does project alpha ship? Does project alpha ship soon?"  # two questions: +2
    resp = ask(broad_q, debug=True, runtime=llm_runtime)
    assert trace_json(resp)["k"]["value"] == 7 and "broad question" in trace_json(resp)["k"]["reasons"][1]
    assert not resp.abstained and context_chunks(llm_stub) == 7


def test_explicit_k_out_of_range_is_an_error_naming_the_range(notes, llm_runtime, llm_stub, notes_config):
    ten_passages(notes)
    script(llm_stub, answer="Soon.")
    for bad in (20, 1, 0):
        with pytest.raises(InputError, match=f"k must be between 3 and 8, got {bad}"):
            ask(Q, k=bad, runtime=llm_runtime)
    assert trace_json(ask(Q, k=8, debug=True, runtime=llm_runtime))["k"] == {"value": 8, "requested": 8,
                                                                          "reasons": ["explicit k"]}
    assert context_chunks(llm_stub) == 8
    ask(Q, k=6, runtime=llm_runtime)
    assert context_chunks(llm_stub) == 6


def test_detail_bounds_the_sentences_and_the_sources_quoted_from(notes, runtime, notes_config):
    ten_passages(notes)  # ten passages saying the same: each quoted sentence comes from its own passage
    for detail, sentences in (("brief", 1), ("normal", 2), ("detailed", 3)):
        resp = ask(Q, detail=detail, runtime=runtime)
        assert len(resp.answer.splitlines()) == sentences
        assert len(resp.references) == sentences  # only the sources something was taken from
        assert {r.file for r in resp.references} == {line.split("[File: ")[1].split(",")[0]
                                                     for line in resp.answer.splitlines()}


# -- debug, clearance, bad input, search ---------------------------------------------------------------

def test_debug_lists_every_candidate_with_scores(notes, runtime, notes_config):
    two_notes(notes)
    q = notes.query_vector(Q)
    notes.note("work", "garden/plants.md", [("# Plants", OFF_TOPIC)], embeddings=[toward(q, 0.1, 9)])
    resp = ask(Q, k=3, debug=True, runtime=runtime)
    cands = trace_json(resp)["candidates"]
    assert [c["rank"] for c in cands] == [1, 2, 3, 4]
    assert set(cands[0]) >= {"chunk_id", "path", "heading", "text", "vector", "lexical", "final", "rank", "folder",
                             "folder_prior", "found_by", "vector_rank", "lexical_rank", "lines"}
    assert cands[0]["heading"] == "# Alpha > ## Timeline" and cands[0]["text"].startswith("Project alpha ships")
    plants = by_path(resp)["garden/plants.md"]
    assert plants["found_by"] == "vector" and plants["lexical"] is None and plants["folder"] == "garden"
    assert [c["final"] for c in cands] == sorted((c["final"] for c in cands), reverse=True)
    assert set(trace_json(resp)) == {"question", "detail", "k", "scope", "retrieval", "candidates", "best_score",
                                     "sentences_scored", "decision", "confidence", "llm", "citations", "timings_ms"}
    assert set(trace_json(resp)["scope"]) == {"vaults", "folders", "filter"}
    assert trace_json(resp)["decision"] == resp.to_dict()["decision"]  # the record, not a copy in other words
    assert resp.to_dict()["debug"] == trace_json(resp)
    assert "debug" not in ask(Q, runtime=runtime).to_dict()


def test_restricted_notes_stay_out_of_reach(notes, runtime, notes_config):
    q = notes.query_vector(Q)
    notes.note("work", "projects/alpha.md", [("# Alpha", "Project alpha ships in March.")],
               embeddings=[toward(q, 0.8, 1)])
    notes.note("work", "secret/plan.md", [("# Plan", "Project alpha ships early.")],
               embeddings=[toward(q, 0.9, 2)], confidentiality="confidential")
    internal = Scope(clearance="internal")
    resp = ask(Q, debug=True, runtime=runtime, scope=internal)
    assert trace_json(resp)["scope"]["folders"]["searched"] == ["work/projects"]
    assert {c["path"] for c in trace_json(resp)["candidates"]} == {"projects/alpha.md"}
    assert {r.source_path for r in resp.references} == {"projects/alpha.md"} and "early" not in resp.answer
    assert {i.source_path for i in search(Q, k=20, runtime=runtime, scope=internal).items} == {"projects/alpha.md"}
    assert "secret/plan.md" in {i.source_path for i in search(Q, k=20, runtime=runtime).items}
    with pytest.raises(InputError, match="no folder named 'secret'"):
        ask(Q, folders=["secret"], runtime=runtime, scope=internal)
    with pytest.raises(AuthError):
        ask(Q, vaults=["work"], runtime=runtime, scope=Scope(vaults=("home",)))


def counts(conn, notes):
    row = conn.execute(f"select (select count(*) from documents) d, (select count(*) from chunks) c,"
                       f" (select count(*) from {notes.model.embedding_table}) e").fetchone()
    conn.commit()
    return row


def test_bad_input_is_a_clear_error_and_loses_nothing(conn, notes, runtime, notes_config):
    two_notes(notes)
    notes.vault("empty")
    before = counts(conn, notes)
    cases = [
        (dict(question="   "), InputError, "the question is empty"),
        (dict(question="x" * 100_000), InputError, "characters long; the limit is"),
        (dict(question=Q, vaults=["nope"]), NotFoundError, r"unknown vault 'nope' \(known: empty, work\)"),
        (dict(question=Q, vaults=[""]), InputError, "a vault name is empty"),
        (dict(question=Q, folders=["projcts"]), InputError, r"no folder named 'projcts' .*did you mean: .*projects"),
        (dict(question=Q, detail="verbose"), InputError, "detail must be one of: brief, normal, detailed"),
        (dict(question=Q, k="5"), InputError, "k must be a whole number"),
        (dict(question=Q, vaults=["empty"]), NotFoundError, r"nothing is indexed in vault 'empty' yet: run `ragpg index`"),
    ]
    for kwargs, error, message in cases:
        with pytest.raises(error, match=message):
            ask(runtime=runtime, **kwargs)
    assert counts(conn, notes) == before
    assert not ask(Q, runtime=runtime).abstained  # still answerable afterwards


def test_no_vaults_at_all(runtime):
    with pytest.raises(NotFoundError, match="no vaults yet"):
        ask(Q, runtime=runtime)
    with pytest.raises(NotFoundError, match="no vaults yet"):
        search(Q, runtime=runtime)


def test_search_ranks_and_filters(notes, runtime):
    q = notes.query_vector(Q)
    notes.note("work", "projects/alpha.md",
               [("# Alpha > ## Timeline", "Project alpha ships in March."),
                ("# Alpha > ## Access", "Alpha staging uses the shared key for project uploads.")],
               embeddings=[toward(q, 0.8, 1), toward(q, 0.7, 2)])
    notes.note("work", "meetings/m1.md", [("# Minutes", OFF_TOPIC)], embeddings=[toward(q, 0.6, 3)])
    notes.note("home", "todo.md", [("# Todo", "Ship the alpha birthday present.")], embeddings=[toward(q, 0.9, 4)])
    items = search(Q, k=10, by="passage", runtime=runtime).to_dict()["items"]
    by_ref = {(i["vault"], i["source_path"], i["ordinal"]): i for i in items}
    assert set(by_ref) == {("work", "projects/alpha.md", 0), ("home", "todo.md", 0),
                           ("work", "projects/alpha.md", 1), ("work", "meetings/m1.md", 0)}
    # alpha.md#0 holds all three question words (BM25 share 1.0), m1.md none (lowest: cosine 0.6, no words)
    alpha, access = by_ref[("work", "projects/alpha.md", 0)], by_ref[("work", "projects/alpha.md", 1)]
    assert alpha["score"] == pytest.approx(notes_profile_final(0.8, 1.0), abs=1e-5)
    assert items[-1]["source_path"] == "meetings/m1.md"
    assert items[-1]["score"] == pytest.approx(notes_profile_final(0.6, 0.0), abs=1e-5)
    assert [i["score"] for i in items] == sorted((i["score"] for i in items), reverse=True)
    assert alpha["heading_path"] == "# Alpha > ## Timeline" and alpha["start_line"] == 1
    # (secrets are masked by the indexer before they are stored: tests/server/test_masking.py)
    assert "shared key" in access["snippet"]
    assert [i.vault for i in search(Q, vaults=["home"], runtime=runtime).items] == ["home"]
    assert [i.vault for i in search(Q, filters={"vault": "home"}, runtime=runtime).items] == ["home"]
    assert search(Q, vaults=["work"], filters={"vault": "home"}, runtime=runtime).items == []
    assert [i.source_path for i in search(Q, filters={"folder": "meetings"}, runtime=runtime).items] == [
        "meetings/m1.md"]
    assert len(search(Q, k=1, runtime=runtime).items) == 1
    for bad in (0, 101, "3", True):
        with pytest.raises(InputError, match="k must be a whole number between 1 and 100"):
            search(Q, k=bad, runtime=runtime)
    with pytest.raises(InputError, match="the search query is empty"):
        search("", runtime=runtime)
    with pytest.raises(NotFoundError, match="unknown vault 'nope'"):
        search(Q, vaults=["nope"], runtime=runtime)


def test_search_by_note_lists_k_distinct_notes_each_with_its_best_passages(notes, runtime, monkeypatch):
    q = notes.query_vector(Q)
    notes.note("work", "projects/alpha.md",
               [("# Alpha > ## Timeline", "Project alpha ships in March."),
                ("# Alpha > ## Access", "Alpha staging uses the shared key for project uploads."),
                ("# Alpha > ## Risks", "Alpha may slip if the project key expires.")],
               embeddings=[toward(q, 0.9, 1), toward(q, 0.85, 2), toward(q, 0.8, 3)])
    notes.note("work", "meetings/m1.md", [("# Minutes", OFF_TOPIC)], embeddings=[toward(q, 0.6, 4)])
    notes.note("home", "todo.md", [("# Todo", "Ship the alpha birthday present.")], embeddings=[toward(q, 0.7, 5)])
    passages = search(Q, k=10, by="passage", runtime=runtime)
    assert [i.source_path for i in passages.items[:3]] == ["projects/alpha.md"] * 3  # one note fills the top
    resp = search(Q, k=2, runtime=runtime)
    assert resp.by == "note" and [n.source_path for n in resp.notes] == ["projects/alpha.md", "todo.md"]
    alpha = resp.notes[0]
    assert [p.ordinal for p in alpha.passages] == [i.ordinal for i in passages.items[:3]]  # best first
    assert alpha.score == alpha.passages[0].score == passages.items[0].score
    assert resp.items == [p for n in resp.notes for p in n.passages]
    use_settings(monkeypatch, search_passages_per_note=1)
    one_each = search(Q, k=10, runtime=runtime)
    assert [n.source_path for n in one_each.notes] == ["projects/alpha.md", "todo.md", "meetings/m1.md"]
    assert all(len(n.passages) == 1 for n in one_each.notes)
    by_passage = search(Q, k=2, by="passage", runtime=runtime)  # k passages, grouped under their note
    assert len(by_passage.items) == 2 and [len(n.passages) for n in by_passage.notes] == [2]
    with pytest.raises(InputError, match="by must be 'note' or 'passage'"):
        search(Q, by="chunk", runtime=runtime)  # type: ignore[arg-type]


GIBBERISH = "qwertyuiop zxcvbnm asdfghjkl"


def test_a_search_sharing_no_word_and_no_meaning_with_the_notes_finds_nothing(notes, runtime, monkeypatch):
    g = notes.query_vector(GIBBERISH)
    notes.note("work", "projects/alpha.md", [("# Alpha", "Project alpha ships in March.")],
               embeddings=[toward(g, 0.35, 1)])  # as close as gibberish comes with the local model
    notes.note("work", "garden/plants.md", [("# Plants", OFF_TOPIC)], embeddings=[toward(g, 0.3, 2)])
    assert search(GIBBERISH, runtime=runtime).notes == []
    assert search(GIBBERISH, by="passage", runtime=runtime).items == []
    # one word the notes use is enough: the same closeness with a shared word lists the notes
    assert [n.source_path for n in search("qwertyuiop alpha", runtime=runtime).notes][:1] == ["projects/alpha.md"]
    # no shared word, but close in meaning (a question in other words): listed
    use_settings(monkeypatch, search_floor_similarity=0.34)
    assert [n.source_path for n in search(GIBBERISH, runtime=runtime).notes] == ["projects/alpha.md",
                                                                                "garden/plants.md"]


def test_the_search_floor_counts_only_words_of_notes_the_caller_may_read(notes, runtime):
    g = notes.query_vector(GIBBERISH)
    notes.note("work", "projects/alpha.md", [("# Alpha", "Project alpha ships in March.")],
               embeddings=[toward(g, 0.35, 1)])
    notes.note("work", "vault/secret.md", [("# Secret", "The qwertyuiop launch code.")],
               embeddings=[toward(g, 0.1, 2)], confidentiality="restricted")
    public = Scope(clearance="public")
    assert search(GIBBERISH, runtime=runtime, scope=public).notes == []  # the hidden note's word does not count
    assert "vault/secret.md" in [n.source_path for n in search(GIBBERISH, runtime=runtime).notes]


def test_search_lists_only_passages_above_the_minimum_score(notes, runtime, monkeypatch):
    two_notes(notes)
    everything = search(Q, k=10, by="passage", runtime=runtime).items
    use_settings(monkeypatch, search_min_score=0.6)
    above = search(Q, k=10, by="passage", runtime=runtime).items
    assert above == [i for i in everything if i.score > 0.6] and 0 < len(above) < len(everything)


def test_public_entry_point_matches_the_issue(notes, runtime, notes_config):
    import inspect

    import rag

    params = inspect.signature(rag.ask).parameters
    assert list(params)[:6] == ["question", "vaults", "folders", "k", "detail", "debug"]
    assert (params["k"].default, params["detail"].default, params["debug"].default) == (None, "normal", False)
    assert rag.ask is ask_module.ask and rag.search is ask_module.search
    two_notes(notes)
    resp = rag.ask(Q, runtime=runtime)
    assert isinstance(resp, rag.AskResponse) and resp.debug is None and not resp.abstained
    assert set(resp.references[0].to_dict()) >= {"vault", "source_path", "heading_path", "ordinal", "lines",
                                                 "snippet"}
    ref = resp.references[0].to_dict()  # each value under its one name (docs/glossary.md)
    assert set(ref) == {"vault", "source_path", "file", "heading_path", "heading", "location", "open_at", "ordinal",
                        "lines", "start_line", "end_line", "snippet"}


def test_a_repeated_question_reuses_its_sentence_vectors(notes, runtime, monkeypatch):
    """A long-lived process quotes from the same passages again: their sentences are embedded once."""
    two_notes(notes)
    first = ask(Q, runtime=runtime)
    embedded: list[list[str]] = []
    real = runtime.embedder.embed_documents

    def spy(texts):  # the real embedder, watched
        embedded.append(list(texts))
        return real(texts)

    monkeypatch.setattr(runtime.embedder, "embed_documents", spy)
    second = ask(Q, runtime=runtime)
    assert second.answer == first.answer and not second.abstained
    assert [t for batch in embedded for t in batch if t != Q] == []  # no sentence embedded a second time
    monkeypatch.setattr(runtime.embedder, "_sentence_cache_size", 0)  # no cache: the same ask embeds them again
    assert ask(Q, runtime=runtime).answer == first.answer
    # each sentence after its note's title and section (the H1 "Alpha" is the title, not said twice)
    assert "alpha Timeline: Project alpha ships in March after the beta review." in [t for b in embedded for t in b]


def test_one_scoped_connection_per_request(notes, llm_runtime, llm_stub, monkeypatch):
    """ask and search read through one connection, scoped to the caller (folder ranking by the LLM,
    then by centroids, retrieval, word statistics); ask gives it back before the answer's LLM call."""
    from contextlib import contextmanager

    two_notes(notes)
    notes.note("work", "meetings/m.md", [("# M", OFF_TOPIC)], embeddings=[toward(notes.query_vector(Q), 0.5, 7)])
    use_settings(monkeypatch, folder_prior_weight=0.2)
    script(llm_stub, folders="not a list", answer="Soon [File: alpha.md, Section: Timeline].")
    taken: list[object] = []
    real = llm_runtime.connection

    @contextmanager
    def counting(**kwargs):
        with real(**kwargs) as conn:
            taken.append(kwargs.get("scope"))
            answering = len(answer_prompts(llm_stub))
            yield conn
            assert len(answer_prompts(llm_stub)) == answering  # no answering call while it is held

    monkeypatch.setattr(llm_runtime, "connection", counting)
    caller = Scope(clearance="internal")
    resp = ask(Q, debug=True, runtime=llm_runtime, scope=caller)
    assert resp.answered_by == "llm" and len(answer_prompts(llm_stub)) == 1
    assert any(FOLDER_PROMPT_MARK in r["messages"][-1]["content"] for r in llm_stub.requests)  # folders ranked
    assert trace_json(resp)["scope"]["folders"]["selected"]  # ... by centroids, after the LLM's answer was malformed
    assert taken == [caller]
    taken.clear()
    assert search(Q, runtime=llm_runtime, scope=caller).items
    assert taken == [caller]
