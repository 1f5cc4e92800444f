"""`rag.ask` against real Postgres, with exact embeddings (kit.toward) and the litellm stub server."""

from __future__ import annotations

import importlib

import pytest

from rag.access import Scope
from rag.errors import AuthError, InputError, NotFoundError
from rag.notes.ask import ABSTAIN_ANSWER, CAUTION, NOTICE_LLM_FAILED, NOTICE_NO_LLM, ask
from rag.notes.settings import NotesSettings
from tests.notes.conftest import FOLDER_PROMPT_MARK, script
from tests.notes.kit import toward

# The module, even once `rag/__init__.py` re-exports the `ask` function under the same name.
ask_module = importlib.import_module("rag.notes.ask")

Q = "When does project alpha ship?"  # content terms: project, alpha, ship
OFF_TOPIC = "Gardening notes about tomatoes and basil."  # no term of Q: lexical 0


def use_settings(monkeypatch, **changes):
    custom = NotesSettings(**changes)
    monkeypatch.setattr(ask_module, "notes_settings", lambda _settings: custom)
    return custom


def by_path(resp):
    return {c["path"]: c for c in resp.debug["candidates"]}


# -- rerank math, floors, abstention ----------------------------------------------------------------

def test_final_score_is_the_hand_computed_blend(notes, runtime):
    q = notes.query_vector(Q)
    notes.note("work", "projects/alpha.md", [("# Alpha > ## Timeline", "Alpha ships in March after the beta review.")],
               embeddings=[toward(q, 0.8)])
    resp = ask(Q, debug=True, runtime=runtime)
    c = resp.debug["candidates"][0]
    # 8 tokens, 1 match ("alpha"): 1/8*10 = 1.25 -> 0.4 cap; "alpha" in the heading: +0.1 -> 0.5
    assert c["vector"] == pytest.approx(0.8, abs=1e-5)
    assert c["lexical"] == pytest.approx(0.5)
    assert c["final"] == pytest.approx(0.7 * 0.8 + 0.3 * 0.5, abs=1e-5)  # 0.71, folder weight 1.0
    assert c["rank"] == 1 and c["dropped"] is None
    assert not resp.abstained and [r.rel_path for r in resp.references] == ["projects/alpha.md"]


def test_abstains_when_there_are_no_results_at_all(notes, runtime):
    notes.note("work", "projects/alpha.md", [("# Alpha", "Alpha ships in March.")], embed=False)
    resp = ask(Q, debug=True, runtime=runtime)
    assert resp.abstained and resp.abstain_reason == "no_relevant_context"
    assert resp.answer == ABSTAIN_ANSWER and resp.references == []
    assert resp.debug["abstain_point"] == "no_results" and resp.debug["candidates"] == []


def test_abstains_when_nothing_passes_the_vector_floor(notes, runtime):
    q = notes.query_vector(Q)
    notes.note("work", "projects/alpha.md", [("# Alpha", "Alpha ships in March.")], embeddings=[toward(q, 0.25)])
    resp = ask(Q, debug=True, runtime=runtime)
    assert resp.abstained and resp.answer == ABSTAIN_ANSWER and resp.references == []
    assert resp.debug["abstain_point"] == "below_vector_floor"
    assert resp.debug["candidates"][0]["dropped"] == "below_vector_floor"


def test_abstains_when_nothing_passes_the_final_floor(notes, runtime):
    q = notes.query_vector(Q)
    # 0.7 * 0.5 + 0.3 * 0 = 0.35 < 0.4 while 0.5 passes the vector floor
    notes.note("work", "garden/plants.md", [("# Plants", OFF_TOPIC)], embeddings=[toward(q, 0.5)])
    resp = ask(Q, debug=True, runtime=runtime)
    assert resp.abstained and resp.abstain_reason == "no_relevant_context"
    assert resp.debug["abstain_point"] == "below_final_floor"
    assert resp.debug["candidates"][0]["final"] == pytest.approx(0.35, abs=1e-5)


def test_low_confidence_band_asks_for_a_cautious_answer(notes, llm_runtime, llm_stub, monkeypatch):
    use_settings(monkeypatch, final_floor=0.1)
    q = notes.query_vector(Q)
    notes.note("work", "garden/plants.md", [("# Plants", OFF_TOPIC)], embeddings=[toward(q, 0.35)])  # 0.245
    script(llm_stub, answer="Perhaps in spring [File: plants.md, Section: Plants].")
    resp = ask(Q, runtime=llm_runtime)
    assert resp.confidence == "low" and not resp.abstained
    assert CAUTION.strip() in llm_stub.requests[-1]["messages"][-1]["content"]


def test_best_score_in_the_filtered_band_abstains(notes, runtime, monkeypatch):
    use_settings(monkeypatch, vector_floor=0.0, final_floor=0.0)
    q = notes.query_vector(Q)
    notes.note("work", "garden/plants.md", [("# Plants", OFF_TOPIC)], embeddings=[toward(q, 0.25)])  # 0.175
    resp = ask(Q, debug=True, runtime=runtime)
    assert resp.abstained and resp.debug["abstain_point"] == "low_confidence"


# -- folders ------------------------------------------------------------------------------------------

def three_folders(notes, sims=(0.8, 0.8, 0.8)):
    q = notes.query_vector(Q)
    notes.note("work", "projects/alpha.md", [("# Status", OFF_TOPIC)], embeddings=[toward(q, sims[0], 1)])
    notes.note("work", "meetings/m1.md", [("# Minutes", OFF_TOPIC)], embeddings=[toward(q, sims[1], 2)])
    notes.note("work", "recipes/soup.md", [("# Soup", OFF_TOPIC)], embeddings=[toward(q, sims[2], 3)])


def test_user_folder_first_then_llm_ranking(notes, llm_runtime, llm_stub):
    three_folders(notes)
    script(llm_stub, folders='```json\n["work/recipes"]\n```', answer="No citation here.")
    resp = ask(Q, folders=["projects"], debug=True, runtime=llm_runtime)
    sel = resp.debug["folders"]
    assert sel["method"] == "user+llm"
    assert [(s["folder"], s["source"], s["weight"]) for s in sel["selected"]] == [
        ("work/projects/**", "user", 1.0), ("work/recipes", "llm", 0.9)]
    assert sel["available"] == ["work/meetings", "work/projects", "work/recipes"]
    prompt = next(r["messages"][-1]["content"] for r in llm_stub.requests
                  if FOLDER_PROMPT_MARK in r["messages"][-1]["content"])
    assert "work/meetings\nwork/recipes" in prompt and "work/projects" not in prompt
    # meetings was not selected, so never searched; weights scale the blend: 0.56 and 0.504
    cands = by_path(resp)
    assert set(cands) == {"projects/alpha.md", "recipes/soup.md"}
    assert cands["projects/alpha.md"]["final"] == pytest.approx(0.56, abs=1e-5)
    assert cands["recipes/soup.md"]["final"] == pytest.approx(0.504, abs=1e-5)
    assert resp.debug["k"]["value"] == 4  # normal 5, a user folder -1


def test_malformed_llm_folder_answer_falls_back_to_every_folder(notes, llm_runtime, llm_stub):
    three_folders(notes, sims=(0.5, 0.9, 0.7))
    script(llm_stub, folders="I would look in projects first.", answer="ok")
    resp = ask(Q, debug=True, runtime=llm_runtime)
    sel = resp.debug["folders"]
    assert sel["method"] == "all" and "not a JSON array" in sel["notes"][0]
    # every folder, in centroid order
    assert [s["folder"] for s in sel["selected"]] == ["work/meetings", "work/recipes", "work/projects"]
    assert [s["weight"] for s in sel["selected"]] == [1.0, 0.9, 0.8]


def test_llm_naming_only_unknown_folders_falls_back(notes, llm_runtime, llm_stub):
    three_folders(notes)
    script(llm_stub, folders='["work/archive", "elsewhere"]', answer="ok")
    sel = ask(Q, debug=True, runtime=llm_runtime).debug["folders"]
    assert sel["method"] == "all" and len(sel["selected"]) == 3
    assert any("unknown folders" in n for n in sel["notes"])


def test_llm_down_means_every_folder_and_a_quoted_answer(notes, llm_runtime, llm_stub):
    q = notes.query_vector(Q)
    notes.note("work", "projects/alpha.md", [("# Alpha > ## Timeline", "Project alpha ships in March.")],
               embeddings=[toward(q, 0.8, 1)])
    notes.note("work", "meetings/m1.md", [("# Minutes", OFF_TOPIC)], embeddings=[toward(q, 0.3, 2)])
    llm_stub.fail_status = 500
    resp = ask(Q, debug=True, runtime=llm_runtime)
    assert not resp.abstained and resp.answered_by == "extractive" and resp.notice == NOTICE_LLM_FAILED
    assert resp.answer == "Project alpha ships in March. [File: alpha.md, Section: Timeline]"
    assert resp.debug["folders"]["method"] == "all" and "failed" in resp.debug["folders"]["notes"][0]
    assert "error" in resp.debug["llm"]


def test_without_llm_folders_are_ranked_by_centroid(notes, runtime):
    three_folders(notes, sims=(0.5, 0.2, 0.9))
    sel = ask(Q, debug=True, runtime=runtime).debug["folders"]
    assert sel["method"] == "centroid"
    assert [s["folder"] for s in sel["selected"]] == ["work/recipes", "work/projects", "work/meetings"]


def test_vault_qualified_user_folder_and_several_vaults(notes, runtime):
    q = notes.query_vector(Q)
    notes.note("work", "projects/alpha.md", [("# Alpha", OFF_TOPIC)], embeddings=[toward(q, 0.8, 1)])
    notes.note("home", "projects/house.md", [("# House", OFF_TOPIC)], embeddings=[toward(q, 0.9, 2)])
    resp = ask(Q, folders=["work/projects"], debug=True, runtime=runtime)
    sel = resp.debug["folders"]
    assert [s["folder"] for s in sel["selected"]] == ["work/projects/**", "home/projects"]
    assert sel["available"] == ["home/projects", "work/projects"]
    assert by_path(resp)["projects/house.md"]["folder_weight"] == 0.9
    only_home = ask(Q, vaults=["home"], debug=True, runtime=runtime)
    assert only_home.debug["folders"]["available"] == ["home/projects"]
    assert [r.vault for r in only_home.references] == ["home"]


# -- answers and references ---------------------------------------------------------------------------

def two_notes(notes):
    q = notes.query_vector(Q)
    notes.note("work", "projects/alpha.md",
               [("# Alpha > ## Timeline", "Project alpha ships in March after the beta review."),
                ("# Alpha > ## Budget", "Alpha has a budget of forty thousand.")],
               embeddings=[toward(q, 0.8, 1), toward(q, 0.7, 2)])
    notes.note("work", "projects/beta.md", [("# Beta", "Project beta follows alpha.")], embeddings=[toward(q, 0.6, 3)])


def test_references_come_from_the_citations_made(notes, llm_runtime, llm_stub):
    two_notes(notes)
    script(llm_stub, answer="Alpha ships in March [File: alpha.md, Section: Timeline] "
                            "[Chunk 1] as planned [File: gamma.md, Section: Plans].")
    resp = ask(Q, debug=True, runtime=llm_runtime)
    assert resp.answered_by == "llm" and resp.notice is None
    assert "[Chunk" not in resp.answer
    assert [(r.rel_path, r.heading_path, r.chunk_index) for r in resp.references] == [
        ("projects/alpha.md", "Alpha > Timeline", 0)]
    ref = resp.references[0].to_dict()
    assert ref["lines"] == "1" and ref["snippet"].startswith("Project alpha ships")
    assert resp.debug["citations"]["unmatched_citations"] == ["[File: gamma.md, Section: Plans]"]
    system, user = llm_stub.requests[-1]["messages"]
    assert system["role"] == "system" and "only the user's own notes" in system["content"]
    assert "[Chunk 1]\n[Vault: work] File: projects/alpha.md\nSection: Alpha > Timeline\nContent:\n" in user["content"]
    assert user["content"].rstrip().endswith(f"Question: {Q}")


def test_an_answer_citing_nothing_references_every_passage_used(notes, llm_runtime, llm_stub):
    two_notes(notes)
    script(llm_stub, answer="Alpha ships in March.")
    resp = ask(Q, runtime=llm_runtime)
    assert [(r.rel_path, r.chunk_index) for r in resp.references] == [
        ("projects/alpha.md", 0), ("projects/alpha.md", 1), ("projects/beta.md", 0)]


def test_llm_saying_it_cannot_find_the_answer_abstains(notes, llm_runtime, llm_stub):
    two_notes(notes)
    script(llm_stub, answer="I could not find this information in the available documents.")
    resp = ask(Q, debug=True, runtime=llm_runtime)
    assert resp.abstained and resp.references == [] and resp.debug["abstain_point"] == "llm_found_no_answer"


def test_without_llm_the_answer_quotes_the_notes(notes, runtime):
    two_notes(notes)
    resp = ask(Q, runtime=runtime)
    assert resp.answered_by == "extractive" and resp.notice == NOTICE_NO_LLM and resp.confidence == "normal"
    lines = resp.answer.splitlines()
    assert lines[0] == "Project alpha ships in March after the beta review. [File: alpha.md, Section: Timeline]"
    assert all("[File: " in line for line in lines)
    assert resp.references[0].rel_path == "projects/alpha.md"


def test_debug_lists_every_candidate_with_scores(notes, runtime):
    two_notes(notes)
    q = notes.query_vector(Q)
    notes.note("work", "projects/gamma.md", [("# Gamma", OFF_TOPIC)], embeddings=[toward(q, 0.1, 9)])
    resp = ask(Q, k=3, debug=True, runtime=runtime)
    cands = resp.debug["candidates"]
    assert len(cands) == 4
    assert [c["rank"] for c in cands] == [1, 2, 3, None]
    first = cands[0]
    assert set(first) >= {"chunk_id", "path", "heading", "text", "vector", "lexical", "final", "rank", "folder"}
    assert first["path"] == "projects/alpha.md" and first["heading"] == "Alpha > Timeline"
    assert first["text"].startswith("Project alpha ships")
    assert cands[-1]["dropped"] == "below_vector_floor"
    assert resp.debug["folders"]["selected"][0]["folder"] == "work/projects"
    assert resp.to_dict()["debug"] is resp.debug
    assert "debug" not in ask(Q, runtime=runtime).to_dict()


def test_explicit_k_is_clamped_and_noted_in_debug(notes, runtime):
    two_notes(notes)
    resp = ask(Q, k=20, debug=True, runtime=runtime)
    assert resp.debug["k"]["value"] == 8 and "clamped to 8" in resp.debug["k"]["reasons"][0]
    assert ask(Q, k=1, debug=True, runtime=runtime).debug["k"]["value"] == 3


def test_hybrid_first_stage(notes, runtime, monkeypatch):
    use_settings(monkeypatch, first_stage="hybrid")
    two_notes(notes)
    resp = ask(Q, debug=True, runtime=runtime)
    assert resp.debug["first_stage"] == "hybrid" and not resp.abstained
    first = resp.debug["candidates"][0]
    assert (first["path"], first["chunk_index"]) == ("projects/alpha.md", 0)
    assert first["vector"] == pytest.approx(0.8, abs=1e-5)


def test_restricted_notes_stay_out_of_reach(notes, runtime):
    q = notes.query_vector(Q)
    notes.note("work", "projects/alpha.md", [("# Alpha", "Project alpha ships in March.")],
               embeddings=[toward(q, 0.8, 1)])
    notes.note("work", "secret/plan.md", [("# Plan", "Project alpha ships early.")],
               embeddings=[toward(q, 0.9, 2)], confidentiality="confidential")
    resp = ask(Q, debug=True, runtime=runtime, scope=Scope(clearance="internal"))
    assert resp.debug["folders"]["available"] == ["work/projects"]
    assert {c["path"] for c in resp.debug["candidates"]} == {"projects/alpha.md"}
    with pytest.raises(AuthError):
        ask(Q, vaults=["work"], runtime=runtime, scope=Scope(vaults=("home",)))


# -- bad input ----------------------------------------------------------------------------------------

def counts(conn, notes):
    row = conn.execute(f"select (select count(*) from documents) d, (select count(*) from chunks) c,"
                       f" (select count(*) from {notes.model.embedding_table}) e").fetchone()
    conn.commit()
    return row


def test_bad_input_is_a_clear_error_and_loses_nothing(conn, notes, runtime):
    two_notes(notes)
    notes.vault("empty")
    before = counts(conn, notes)
    cases = [
        (dict(question="   "), InputError, "the question is empty"),
        (dict(question=Q, vaults=["nope"]), NotFoundError, r"unknown vault 'nope' \(known vaults: empty, work\)"),
        (dict(question=Q, folders=["projcts"]), InputError, r"no folder named 'projcts' .*did you mean: .*projects"),
        (dict(question=Q, detail="verbose"), InputError, "detail must be one of: brief, normal, detailed"),
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


# -- pool, dedupe, search -----------------------------------------------------------------------------

def test_pool_cap_stops_searching_further_folders(notes, runtime, monkeypatch):
    use_settings(monkeypatch, pool_cap=2, candidates_per_scope=2)
    three_folders(notes, sims=(0.9, 0.8, 0.7))
    q = notes.query_vector(Q)
    notes.note("work", "projects/beta.md", [("# Beta", OFF_TOPIC)], embeddings=[toward(q, 0.85, 4)])
    resp = ask(Q, debug=True, runtime=runtime)
    assert len(resp.debug["candidates"]) == 2
    assert [s["folder"] for s in resp.debug["folders"]["searched"]] == ["work/projects"]
    assert "pool cap 2 reached" in resp.debug["notes"][0]


def test_overlapping_user_folders_are_deduplicated(notes, runtime):
    q = notes.query_vector(Q)
    notes.note("work", "projects/alpha/plan.md", [("# Plan", OFF_TOPIC)], embeddings=[toward(q, 0.9, 1)])
    notes.note("work", "projects/beta.md", [("# Beta", OFF_TOPIC)], embeddings=[toward(q, 0.8, 2)])
    resp = ask(Q, folders=["projects", "projects/alpha"], debug=True, runtime=runtime)
    paths = [c["path"] for c in resp.debug["candidates"]]
    assert sorted(paths) == ["projects/alpha/plan.md", "projects/beta.md"]
    assert by_path(resp)["projects/alpha/plan.md"]["folder_weight"] == 1.0  # found first by "projects"


def test_search_ranks_filters_and_masks(notes, runtime):
    from rag.notes.ask import search

    q = notes.query_vector(Q)
    notes.note("work", "projects/alpha.md",
               [("# Alpha > ## Timeline", "Project alpha ships in March."),
                ("# Alpha > ## Access", "Alpha staging uses AKIAIOSFODNN7EXAMPLE for project uploads.")],
               embeddings=[toward(q, 0.8, 1), toward(q, 0.7, 2)])
    notes.note("work", "meetings/m1.md", [("# Minutes", OFF_TOPIC)], embeddings=[toward(q, 0.6, 3)])
    notes.note("home", "todo.md", [("# Todo", "Ship the alpha birthday present.")], embeddings=[toward(q, 0.9, 4)])
    resp = search(Q, k=10, runtime=runtime)
    items = resp.to_dict()["items"]
    assert [(i["vault"], i["source_path"], i["chunk_index"]) for i in items] == [
        ("home", "todo.md", 0), ("work", "projects/alpha.md", 0), ("work", "projects/alpha.md", 1),
        ("work", "meetings/m1.md", 0)]
    assert items[1]["heading_path"] == "Alpha > Timeline" and items[1]["start_line"] == 1
    assert "AKIAIOSFODNN7EXAMPLE" not in items[2]["snippet"] and "REDACTED" in items[2]["snippet"]
    assert [i["source_path"] for i in search(Q, folders=["projects"], runtime=runtime).to_dict()["items"]] == [
        "projects/alpha.md", "projects/alpha.md"]
    assert [i.vault for i in search(Q, vaults=["home"], runtime=runtime).items] == ["home"]
    assert [i.vault for i in search(Q, filters={"vault": "home"}, runtime=runtime).items] == ["home"]
    assert [i.source_path for i in search(Q, filters={"folder": "meetings"}, runtime=runtime).items] == [
        "meetings/m1.md"]
    assert len(search(Q, k=1, runtime=runtime).items) == 1
    for bad in (0, 101, "3"):
        with pytest.raises(InputError, match="k must be a whole number between 1 and 100"):
            search(Q, k=bad, runtime=runtime)
    with pytest.raises(InputError, match="the search query is empty"):
        search("", runtime=runtime)
    with pytest.raises(NotFoundError, match="unknown vault 'nope'"):
        search(Q, vaults=["nope"], runtime=runtime)


def test_user_folder_prefix_scope_filters_in_sql(notes, runtime):
    q = notes.query_vector(Q)
    notes.note("j", "2024-01/a.md", [("# A", OFF_TOPIC)], embeddings=[toward(q, 0.8, 1)])
    notes.note("j", "2024-02/b.md", [("# B", OFF_TOPIC)], embeddings=[toward(q, 0.7, 2)])
    notes.note("j", "2023-12/c.md", [("# C", OFF_TOPIC)], embeddings=[toward(q, 0.9, 3)])
    resp = ask(Q, folders=["2024-"], debug=True, runtime=runtime)
    sel = resp.debug["folders"]["selected"]
    assert [(s["folder"], s["weight"]) for s in sel] == [("j/2024-*", 1.0), ("j/2023-12", 0.9)]
    assert by_path(resp)["2024-02/b.md"]["folder"] == "j/2024-*"
    assert by_path(resp)["2023-12/c.md"]["folder"] == "j/2023-12"


def test_folders_weighted_below_reach_of_the_final_floor_are_not_searched(notes, runtime):
    q = notes.query_vector(Q)
    for i in range(8):  # centroid order f0 (0.9) ... f7 (0.55)
        notes.note("work", f"f{i}/n.md", [("# N", OFF_TOPIC)], embeddings=[toward(q, 0.9 - 0.05 * i, i)])
    resp = ask(Q, debug=True, runtime=runtime)
    # best possible blend 0.7 + 0.3 * 0.5 = 0.85; weight 0.4 (7th folder) gives 0.34 < 0.4
    assert [s["folder"] for s in resp.debug["folders"]["searched"]] == [f"work/f{i}" for i in range(6)]
    assert "from work/f6 on (weight 0.4)" in resp.debug["notes"][0]
    assert len(resp.debug["folders"]["selected"]) == 8


def test_each_folder_scope_yields_at_most_15_candidates(notes, runtime):
    q = notes.query_vector(Q)
    for i in range(20):  # similarities 0.50 ... 0.69: the 15 best are n05 ... n19
        notes.note("work", f"projects/n{i:02d}.md", [("# N", OFF_TOPIC)], embeddings=[toward(q, 0.5 + 0.01 * i, i)])
    notes.note("work", "meetings/m.md", [("# M", OFF_TOPIC)], embeddings=[toward(q, 0.45, 99)])
    resp = ask(Q, debug=True, runtime=runtime)
    searched = resp.debug["folders"]["searched"]
    assert searched == [{"folder": "work/projects", "found": 15, "added": 15},
                        {"folder": "work/meetings", "found": 1, "added": 1}]
    from_projects = sorted(c["path"] for c in resp.debug["candidates"] if c["folder"] == "work/projects")
    assert from_projects == [f"projects/n{i:02d}.md" for i in range(5, 20)]


def test_hybrid_first_stage_finds_passages_by_their_words(notes, runtime, monkeypatch):
    q = notes.query_vector(Q)
    notes.note("work", "projects/a.md", [("# Status", OFF_TOPIC)], embeddings=[toward(q, 0.8, 1)])
    notes.note("work", "projects/b.md", [("# Plan", "Project alpha will ship in March.")],
               embeddings=[toward(q, 0.7, 2)])
    # One candidate a scope: the vector stage keeps the closer vector (a); the hybrid stage fuses in
    # BM25, where only b matches the question's words, so b wins the fusion (ranks 2+1 beat rank 1).
    use_settings(monkeypatch, candidates_per_scope=1)
    vector = ask(Q, debug=True, runtime=runtime)
    assert [c["path"] for c in vector.debug["candidates"]] == ["projects/a.md"]
    use_settings(monkeypatch, candidates_per_scope=1, first_stage="hybrid")
    hybrid = ask(Q, debug=True, runtime=runtime)
    assert [c["path"] for c in hybrid.debug["candidates"]] == ["projects/b.md"]
    assert hybrid.debug["candidates"][0]["vector"] == pytest.approx(0.7, abs=1e-5)  # the blend keeps the cosine
    assert [r.rel_path for r in hybrid.references] == ["projects/b.md"]


def test_llm_folder_ranking_orders_and_weights_the_scopes(notes, llm_runtime, llm_stub):
    three_folders(notes, sims=(0.8, 0.8, 0.8))
    script(llm_stub, folders='Sure. Ranked: ["work/recipes", "meetings", "work/projects"]', answer="ok")
    resp = ask(Q, debug=True, runtime=llm_runtime)
    sel = resp.debug["folders"]
    assert sel["method"] == "llm" and sel["llm_answer"].startswith("Sure.")
    assert [(s["folder"], s["source"], s["weight"]) for s in sel["selected"]] == [
        ("work/recipes", "llm", 1.0), ("work/meetings", "llm", 0.9), ("work/projects", "llm", 0.8)]
    cands = by_path(resp)
    assert cands["recipes/soup.md"]["final"] == pytest.approx(0.56, abs=1e-5)
    assert cands["meetings/m1.md"]["final"] == pytest.approx(0.504, abs=1e-5)
    assert cands["projects/alpha.md"]["final"] == pytest.approx(0.448, abs=1e-5)


def test_llm_folder_ranking_leaves_unlisted_folders_out(notes, llm_runtime, llm_stub):
    three_folders(notes)
    script(llm_stub, folders='["work/meetings"]', answer="ok")
    resp = ask(Q, debug=True, runtime=llm_runtime)
    assert [s["folder"] for s in resp.debug["folders"]["selected"]] == ["work/meetings"]
    assert {c["path"] for c in resp.debug["candidates"]} == {"meetings/m1.md"}


def test_folder_weight_can_push_a_passage_under_the_final_floor(notes, runtime):
    q = notes.query_vector(Q)
    # centroid order: projects (0.9), then meetings (0.62); 0.7 * 0.62 = 0.434 passes at weight 1.0,
    # but the second folder weighs 0.9: 0.3906 < 0.4
    notes.note("work", "projects/alpha.md", [("# Status", OFF_TOPIC)], embeddings=[toward(q, 0.9, 1)])
    notes.note("work", "meetings/m1.md", [("# Minutes", OFF_TOPIC)], embeddings=[toward(q, 0.62, 2)])
    resp = ask(Q, debug=True, runtime=runtime)
    m = by_path(resp)["meetings/m1.md"]
    assert m["folder_weight"] == 0.9 and m["final"] == pytest.approx(0.3906, abs=1e-5)
    assert m["dropped"] == "below_final_floor"
    assert [r.rel_path for r in resp.references] == ["projects/alpha.md"]


def test_auto_k_limits_the_passages_answered_from(notes, runtime):
    q = notes.query_vector(Q)
    for i in range(10):
        notes.note("work", f"projects/n{i}.md", [("# N", f"Project alpha note {i} says it ships soon.")],
                   embeddings=[toward(q, 0.9 - 0.01 * i, i)])
    brief = ask(Q, detail="brief", debug=True, runtime=runtime)
    assert brief.debug["k"]["value"] == 3 and [c["rank"] for c in brief.debug["candidates"][:4]] == [1, 2, 3, None]
    assert brief.debug["candidates"][3]["dropped"] == "beyond_k"
    detailed = ask(Q, detail="detailed", debug=True, runtime=runtime)
    assert sum(1 for c in detailed.debug["candidates"] if c["rank"]) == 8
    broad_q = "Give me an overview of everything about project alpha shipping?"
    qb = notes.query_vector(broad_q)
    for i in range(10):
        notes.note("other", f"n{i}.md", [("# N", f"Project alpha note {i} says shipping is soon.")],
                   embeddings=[toward(qb, 0.9 - 0.01 * i, i)])
    broad = ask(broad_q, vaults=["other"], debug=True, runtime=runtime)
    assert broad.debug["k"]["value"] == 7 and "broad question" in broad.debug["k"]["reasons"][1]
    assert max(c["rank"] or 0 for c in broad.debug["candidates"]) == 7 and len(broad.references) <= 7


def test_public_entry_point_matches_the_issue(notes, runtime):
    import inspect

    import rag

    params = inspect.signature(rag.ask).parameters
    assert list(params)[:6] == ["question", "vaults", "folders", "k", "detail", "debug"]
    assert (params["k"].default, params["detail"].default, params["debug"].default) == (None, "normal", False)
    two_notes(notes)
    resp = rag.ask(Q, runtime=runtime)
    assert isinstance(resp, rag.AskResponse) and resp.debug is None and not resp.abstained
    assert set(resp.references[0].to_dict()) >= {"vault", "rel_path", "heading_path", "chunk_index", "lines",
                                                 "snippet"}


def test_without_centroids_every_folder_is_searched_in_name_order(notes, runtime, monkeypatch):
    from rag.errors import DatabaseError

    three_folders(notes, sims=(0.5, 0.2, 0.9))

    def unavailable(*_args, **_kwargs):
        raise DatabaseError("match_folders is missing")

    monkeypatch.setattr(ask_module.retrieve, "match_folders", unavailable)
    resp = ask(Q, debug=True, runtime=runtime)
    sel = resp.debug["folders"]
    assert sel["method"] == "all" and "folder centroids unavailable" in sel["notes"][0]
    assert [s["folder"] for s in sel["selected"]] == ["work/meetings", "work/projects", "work/recipes"]
    assert not resp.abstained  # recipes (0.9) still answers, at weight 0.8: 0.504
