"""Evidence packs: the audit pack explains every ranked chunk; the LLM pack is compact."""

from __future__ import annotations

from rag.config_profiles import Profile
from rag.context.assemble import assemble_context
from rag.context.evidence import SNIPPET_MAX_CHARS, evidence_full, evidence_llm, snippet
from rag.retrieval.rank import rank_candidates
from rag.tokens import count_tokens
from rag.types import Decision, PassRecord
from tests.orchestrator.factory import cand, make_doc, ranked

SECRET = "AKIAIOSFODNN7EXAMPLE"
TEXT = "".join(f"word{i:03d} " for i in range(40))


def scenario():
    doc = make_doc("notes/a.md", TEXT, window=60, stride=40)
    shared = "the same paragraph in two places"
    items = ranked([
        doc.chunks[1],
        cand("b.md", 7, f"aws key {SECRET} lives here", risk_score=0.7, risk_flags=("instruction_like",)),
        doc.chunks[2],
        cand("c.md", 0, shared),
        cand("d.md", 0, shared),
        cand("huge.md", 0, "lorem ipsum " * 300),
    ])
    return items, assemble_context(items, budget_tokens=400)


def decision() -> Decision:
    return Decision(mode="auto", route="base", auto_triggered=False, weak=False, weak_signals=[],
                    top_similarity=0.9, share_above_threshold=1.0, winner="base", reason="retrieval was strong",
                    margin=None, passes=[PassRecord(name="base", count=6, top_similarity=0.9)], notes=[],
                    llm_failures=[], multi_query_ran=False, facets=[], insufficient=False, lexical_backend="sql",
                    decision_signature="x")


def test_full_pack_explains_every_ranked_chunk():
    items, assembled = scenario()
    pack = evidence_full(items, assembled, decision())
    assert pack.decision == decision()
    assert (pack.budget_tokens, pack.used_tokens, pack.insufficient) == (400, assembled.used_tokens, False)
    assert pack.sources["S1"].source_path == "notes/a.md"
    by_ref = {i.ref: i for i in pack.items}
    assert [i.rank for i in pack.items] == [1, 2, 3, 4, 5, 6]
    first = by_ref["v/notes/a.md#1"]
    assert first.id == "S1#1" and first.used and first.notes == ["merged with S1#2"]
    assert first.source == "notes/a.md" and first.heading == "Sec" and first.lines == (1, 1)
    assert first.scores == items[0].scores
    risky = by_ref["v/b.md#7"]
    assert risky.notes == ["risk flags: instruction_like (risk 0.70)"]
    assert by_ref["v/d.md#0"].notes == ["dropped: duplicate of S3#0"] and not by_ref["v/d.md#0"].used
    assert by_ref["v/d.md#0"].id is None
    assert by_ref["v/huge.md#0"].notes == ["dropped: over budget"]
    # the JSON form (POST /v1/context's evidence_full)
    item = pack.model_dump(mode="json")["items"][0]
    assert item["lines"] == [1, 1] and set(item["scores"]) == {"vector", "lexical", "fused", "weights_applied",
                                                                 "penalty", "final"}
    assert pack.model_dump(mode="json")["decision"]["passes"] == [{"name": "base", "count": 6, "top_similarity": 0.9}]


def test_llm_pack_is_compact_and_uses_aliases():
    items, assembled = scenario()
    pack = evidence_llm(assembled, items)
    assert pack.sources == {"S1": "notes/a.md", "S2": "b.md", "S3": "c.md"}
    assert [i.id for i in pack.items] == ["S1#1", "S2#7", "S1#2", "S3#0"]
    b = pack.items[1]
    # the text as the candidate holds it: the pack does not mask again (the indexer masked what it stored)
    assert b.snippet == f"aws key {SECRET} lives here"
    assert b.score == round(items[1].scores.final, 4)
    assert "risk flags: instruction_like (risk 0.70)" in b.notes
    assert pack.items[0].notes == ["merged with S1#2"]


def test_llm_pack_with_real_scores_rounds_to_four_digits():
    cands = [cand("a.md", 0, "alpha", similarity=0.123456789), cand("b.md", 0, "beta", similarity=0.3)]
    items = rank_candidates(cands, Profile(w_cosine=1.0, w_bm25=0.0, w_freshness=0.0))
    pack = evidence_llm(assemble_context(items, budget_tokens=1000), items)
    assert [i.score for i in pack.items] == [0.3, 0.1235]


def test_snippets_are_cut_to_the_named_maximum():
    long = "word " * 500
    cut = snippet(long, SNIPPET_MAX_CHARS)
    assert len(cut) <= SNIPPET_MAX_CHARS and cut.endswith("…")
    assert snippet("short  text\n here", SNIPPET_MAX_CHARS) == "short text here"


def test_same_path_in_two_vaults_gets_vault_prefixed_aliases():
    items = ranked([cand("a.md", 0, "one", vault="work"), cand("a.md", 0, "two", vault="home")])
    assembled = assemble_context(items, budget_tokens=count_tokens("x") * 1000)
    assert evidence_llm(assembled, items).sources == {"S1": "work/a.md", "S2": "home/a.md"}


def test_empty_context_packs():
    items = ranked([cand("a.md", 0, "some words")])
    assembled = assemble_context(items, budget_tokens=0)
    assert evidence_llm(assembled, items).model_dump() == {"sources": {}, "items": []}
    full = evidence_full(items, assembled)
    assert full.insufficient and full.items[0].notes == ["dropped: over budget"] and full.decision is None


def test_the_json_scores_carry_every_score_field():
    from dataclasses import fields

    from rag.context.evidence import EvidenceItem
    from rag.types import ScoreBreakdown

    s = ScoreBreakdown(vector=0.5, lexical=1.5, fused=0.7, weights_applied={"memo": 1.2}, penalty=0.1, final=0.6)
    item = EvidenceItem(ref="v/a.md#0", id=None, rank=1, used=False, vault="v", source="a.md", ordinal=0, heading="",
                        lines=None, scores=s, risk_flags=(), snippet="", notes=[])
    out = item.model_dump(mode="json")["scores"]
    assert set(out) == {f.name for f in fields(ScoreBreakdown)}
    assert out == {"vector": 0.5, "lexical": 1.5, "fused": 0.7, "weights_applied": {"memo": 1.2}, "penalty": 0.1,
                   "final": 0.6}
