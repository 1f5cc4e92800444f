"""Ranking rules, context assembly, citations and evidence packs, end to end through compute_context
on files indexed by the real pipeline."""

from __future__ import annotations

import re

import pytest

from rag.compute import compute_context
from rag.config import ChunkingSettings
from rag.tokens import count_tokens
from tests.compute import corpus

TEAM_QUERY = "Ada telemetry pipeline zorblax streaming"
PUMP_QUERY = "pump manual seal valve gasket"
SLIDING = ChunkingSettings(soft_bytes=200, hard_bytes=300, overlap_bytes=100)


@pytest.fixture
def team(env):
    env.vault("team", corpus.ranking_vault())
    return env


@pytest.fixture
def manual(env):
    """One document chunked in overlapping windows (sliding-window chunks)."""
    root = env.vault("manual", {"pump.md": corpus.sliding_text()}, chunking=SLIDING)
    return env, (root / "pump.md").read_bytes()


def by_path(result) -> dict[str, list]:
    out: dict[str, list] = {}
    for r in result.ranked:
        out.setdefault(r.candidate.source_path, []).append(r)
    return out


def test_doc_type_multipliers_end_to_end(team):
    result = compute_context(TEAM_QUERY, vaults=["team"], mode="base", runtime=team.runtime())
    docs = by_path(result)
    expected = {"about/ada.md": 1.15, "kb/ada.md": 1.10, "blog/post/ada.md": 1.00, "blog/copy/ada.md": 1.00,
                "photos/ada.md": 0.30}
    fused = {docs[p][0].scores.fused for p in expected}
    assert max(fused) - min(fused) < 1e-9  # one text and one name: the multiplier is the only difference
    for path, weight in expected.items():
        r = docs[path][0]
        assert r.scores.weights_applied["doc_type"] == weight
        assert r.scores.final == pytest.approx(r.scores.fused * weight)
    ranks = {p: docs[p][0].rank for p in expected}
    # profile before kb before blog; tied blog posts by source_path; photos last of the five
    assert ranks["about/ada.md"] < ranks["kb/ada.md"] < ranks["blog/copy/ada.md"] < ranks["blog/post/ada.md"]
    assert ranks["photos/ada.md"] == max(ranks.values())
    assert result.ranked[0].candidate.source_path == "about/ada.md"


def test_per_source_cap_and_deterministic_order(team):
    rt = team.runtime()
    capped = compute_context(TEAM_QUERY, vaults=["team"], mode="base", runtime=rt)
    again = compute_context(TEAM_QUERY, vaults=["team"], mode="base", runtime=rt)
    uncapped = compute_context(TEAM_QUERY, vaults=["team"], mode="base", profile="uncapped", runtime=rt)
    handbook = "guides/handbook.md"
    assert len(by_path(uncapped)[handbook]) > 3
    kept = by_path(capped)[handbook]
    assert len(kept) == 3  # chat's per_source_cap
    best = sorted(by_path(uncapped)[handbook], key=lambda r: -r.scores.final)[:3]
    assert {r.candidate.ref for r in kept} == {r.candidate.ref for r in best}

    # the same order; scores equal up to freshness, which moves with the clock (notes without a
    # frontmatter date are dated by their file's mtime)
    assert [r.candidate.ref for r in capped.ranked] == [r.candidate.ref for r in again.ranked]
    assert [r.scores.final for r in capped.ranked] == pytest.approx([r.scores.final for r in again.ranked], rel=1e-6)
    assert [r.rank for r in capped.ranked] == list(range(1, len(capped.ranked) + 1))
    keys = [(-r.scores.final, r.candidate.source_path, r.candidate.ordinal) for r in capped.ranked]
    assert keys == sorted(keys)
    assert capped.context == again.context and capped.citations == again.citations


def test_repeated_text_enters_the_context_once(team):
    result = compute_context(TEAM_QUERY, vaults=["team"], mode="base", runtime=team.runtime())
    assert result.context.count(corpus.RANKING_BODY.strip()) == 1
    assert [c.source_path for c in result.citations].count("about/ada.md") == 1
    first = next(c for c in result.citations if c.source_path == "about/ada.md")
    items = {i.source: i for i in result.evidence_full.items}
    for path in ("kb/ada.md", "blog/post/ada.md", "blog/copy/ada.md", "photos/ada.md"):
        assert items[path].used is False
        assert items[path].notes == [f"dropped: duplicate of {first.marker}#0"]


def test_sliding_window_chunks_merge_into_one_exact_block(manual):
    env, source = manual
    rows = env.conn.execute("select ordinal, start_byte, end_byte from chunks order by ordinal").fetchall()
    assert len(rows) >= 4
    assert all(b["start_byte"] < a["end_byte"] for a, b in zip(rows, rows[1:], strict=False))  # they overlap

    result = compute_context(PUMP_QUERY, profile="uncapped", mode="base", runtime=env.runtime())
    assert len(result.citations) == 1
    cit = result.citations[0]
    assert list(cit.ordinals) == [r["ordinal"] for r in rows]
    block = source[rows[0]["start_byte"]:rows[-1]["end_byte"]].decode()
    assert result.context == f"[S1] {cit.title} (lines {cit.start_line}-{cit.end_line})\n{block}"
    for i in range(12):  # the overlaps were spliced out: every paragraph once
        assert result.context.count(f"Paragraph {i} of") == 1
    merged = result.evidence_llm.items[0].notes
    assert merged and merged[0].startswith("merged with S1#")


def test_capped_windows_still_give_exact_source_text(manual):
    env, source = manual
    result = compute_context(PUMP_QUERY, mode="base", runtime=env.runtime())
    text = source.decode()
    blocks = result.context.split("\n\n[S")
    assert len(result.ranked) == 3 and blocks
    for block in blocks:
        body = block.split("\n", 1)[1]
        assert body.strip() in text  # a block is one continuous span of the file
    for i in range(12):
        assert result.context.count(f"Paragraph {i} of") <= 1


@pytest.mark.parametrize("budget", [0, 10, 40, 80, 160, 4000])
def test_budget_is_respected_and_counted_exactly(manual, budget):
    env, _ = manual
    result = compute_context(PUMP_QUERY, profile="uncapped", mode="base", budget_tokens=budget,
                             runtime=env.runtime())
    assert result.used_tokens == count_tokens(result.context) <= budget
    cited = {ref for c in result.citations for ref in c.chunk_refs}
    assert result.insufficient == (not cited)
    if budget == 0:
        assert (result.context, result.citations, result.insufficient) == ("", [], True)
        assert result.evidence_llm.model_dump() == {"sources": {}, "items": []}
    if budget == 4000:
        assert cited == {r.candidate.ref for r in result.ranked}
    if 0 < budget < 4000:
        over = [i for i in result.evidence_full.items if "dropped: over budget" in i.notes]
        assert over and all(not i.used for i in over)


def test_budget_fills_more_with_more_tokens(manual):
    env, _ = manual
    rt = env.runtime()
    counts = []
    for budget in (40, 80, 160, 320):
        result = compute_context(PUMP_QUERY, profile="uncapped", mode="base", budget_tokens=budget, runtime=rt)
        counts.append(sum(len(c.chunk_refs) for c in result.citations))
    assert counts == sorted(counts) and counts[0] < counts[-1]


@pytest.mark.parametrize("budget", [60, 150, 4000])
def test_every_chunk_in_the_context_is_cited(env, budget):
    env.vault("kb", corpus.KB)
    env.vault("team", corpus.ranking_vault())
    env.vault("manual", {"pump.md": corpus.sliding_text()}, chunking=SLIDING)
    result = compute_context("zorblax maintenance telemetry pump seal", budget_tokens=budget, runtime=env.runtime())
    cited = {ref for c in result.citations for ref in c.chunk_refs}
    used = {i.ref for i in result.evidence_full.items if i.used}
    assert cited == used and cited
    for r in result.ranked:
        c = r.candidate
        if c.ref in cited:
            assert c.content.strip() in result.context
        elif c.content.strip() in result.context:
            # text that is in the context but not cited must be a repeat of a cited chunk's text
            item = next(i for i in result.evidence_full.items if i.ref == c.ref)
            assert any(n.startswith("dropped: duplicate of") for n in item.notes)
    for cit in result.citations:
        assert f"[{cit.marker}] " in result.context
        assert cit.source_path and cit.start_line is not None and cit.end_line is not None
        assert cit.end_line >= cit.start_line


def test_evidence_packs(env):
    env.vault("kb", corpus.KB)
    env.vault("manual", {"pump.md": corpus.sliding_text()}, chunking=SLIDING)
    result = compute_context("zorblax maintenance pump seal", budget_tokens=300, runtime=env.runtime())
    llm = result.evidence_llm
    assert llm.sources == {c.marker: c.source_path for c in result.citations}
    assert list(llm.sources) == [f"S{i}" for i in range(1, len(llm.sources) + 1)]
    ids = [item.id for item in llm.items]
    assert ids and all(re.fullmatch(r"S\d+#\d+", i) for i in ids)
    assert {i.split("#")[0] for i in ids} == set(llm.sources)
    expected = {f"{c.marker}#{o}" for c in result.citations for o in c.ordinals}
    assert set(ids) == expected and len(ids) == len(expected)
    scores = [item.score for item in llm.items]
    assert scores == sorted(scores, reverse=True)  # items in rank order
    assert all(len(item.snippet) <= 300 for item in llm.items)

    full = result.evidence_full
    assert full.decision == result.decision
    assert (full.budget_tokens, full.used_tokens, full.insufficient) == (300, result.used_tokens, False)
    assert [i.ref for i in full.items] == [r.candidate.ref for r in result.ranked]
    assert {m: s.source_path for m, s in full.sources.items()} == llm.sources
    for item in full.items:
        assert (item.id is not None) == item.used
        assert item.used or item.notes  # an unused chunk says why
    payload = result.to_dict()  # the JSON of POST /v1/context
    assert set(payload) == {"context", "citations", "decision", "used", "ranked", "insufficient", "used_tokens",
                            "evidence_full", "evidence_llm"}  # no deprecated `chunks` doubling `ranked`
    assert payload["evidence_llm"] == llm.model_dump(mode="json") and len(payload["ranked"]) == len(result.ranked)
    assert set(payload["ranked"][0]["scores"]) == {"vector", "lexical", "fused", "final", "penalty", "weights_applied"}
    assert not hasattr(result, "chunks")
    # `used`: the chunks in the context, in context order; a subset of `ranked`, each one cited.
    used_refs = [r.candidate.ref for r in result.used]
    assert used_refs and set(used_refs) <= {r.candidate.ref for r in result.ranked}
    assert used_refs == [i["ref"] for i in payload["used"]]
    assert {i.ref for i in full.items if i.used} <= set(used_refs)
    # one citation per block, in context order: `used` walks the blocks in the same order
    assert used_refs == [ref for c in result.citations for ref in c.chunk_refs]
