"""Every ranking rule, checked against numbers computed by hand."""

from __future__ import annotations

import random
from datetime import UTC, date, datetime

import pytest

from rag.config_profiles import Profile, get_profile
from rag.retrieval.rank import FRESHNESS_UNKNOWN, freshness, parse_date, rank_candidates
from tests.orchestrator.factory import cand

NOW = datetime(2024, 1, 31, tzinfo=UTC)
P = Profile(name="t", w_cosine=0.5, w_bm25=0.3, w_freshness=0.1, w_metadata=0.1, metadata_boost={"policy": 1.0},
            freshness_half_life_days=10, risk_penalty=0.5, per_source_cap=2, persona_weights={"engineer": 1.2})


def by_path(result):
    return {r.candidate.source_path: r for r in result}


def test_fused_and_final_scores_by_hand():
    a = cand("a.md", similarity=0.8, bm25_score=4.0,
             metadata={"date": "2024-01-21", "doc_type": "Policy", "persona": "engineer"})
    b = cand("b.md", similarity=0.6, bm25_score=8.0, metadata={"doc_type": "photo"}, risk_score=0.4)
    c = cand("c.md", bm25_score=2.0, metadata={"date": "2024-01-31T00:00:00Z", "doc_type": "kb"})
    result = rank_candidates([b, c, a], P, now=NOW)
    got = by_path(result)
    # a: vector .8, lexical 4/8 = .5, freshness 10 days / half-life 10 = .5, boost 1 (policy), persona 1.2
    sa = got["a.md"].scores
    assert (sa.vector, sa.lexical) == (0.8, 0.5)
    assert sa.fused == pytest.approx(0.5 * 0.8 + 0.3 * 0.5 + 0.1 * 0.5 + 0.1 * 1.0)  # .70
    assert sa.final == pytest.approx(0.70 * 1.0 * 1.2)  # unknown doc type "policy" → 1.0
    assert dict(sa.weights_applied) == pytest.approx({"doc_type": 1.0, "persona": 1.2, "freshness": 0.5,
                                                      "metadata": 1.0})
    # b: lexical 8/8 = 1, no date → .5, photo 0.30, risk .4 · .5 = .2 penalty
    sb = got["b.md"].scores
    assert sb.fused == pytest.approx(0.30 + 0.30 + 0.05)
    assert sb.penalty == pytest.approx(0.2)
    assert sb.final == pytest.approx(0.65 * 0.30 * 0.8)  # .156
    # c: no similarity (None, counts 0), lexical .25, fresh 1.0, kb 1.10
    sc = got["c.md"].scores
    assert sc.vector is None and sc.lexical == 0.25
    assert sc.final == pytest.approx((0.3 * 0.25 + 0.1 * 1.0) * 1.10)  # .1925
    assert [r.candidate.source_path for r in result] == ["a.md", "c.md", "b.md"]
    assert [r.rank for r in result] == [1, 2, 3]


def test_default_type_weights_and_unknown_types():
    prof = get_profile("chat")
    items = [cand(f"{t}.md", similarity=0.5, metadata={"doc_type": t}) for t in
             ("profile", "projects", "project", "kb_article", "kb", "blog_post", "blog", "photo", "photos", "memo")]
    items.append(cand("none.md", similarity=0.5))
    got = {r.candidate.source_path: r.scores.weights_applied["doc_type"] for r in rank_candidates(items, prof, now=NOW)}
    assert got == {"profile.md": 1.15, "projects.md": 1.15, "project.md": 1.15, "kb_article.md": 1.10,
                   "kb.md": 1.10, "blog_post.md": 1.0, "blog.md": 1.0, "photo.md": 0.30, "photos.md": 0.30,
                   "memo.md": 1.0, "none.md": 1.0}


def test_similarity_is_clamped_and_bm25_divided_by_the_list_max():
    prof = Profile(w_cosine=1.0, w_bm25=1.0, w_freshness=0.0)
    items = [cand("neg.md", similarity=-0.3, bm25_score=1.0), cand("big.md", similarity=1.2, bm25_score=5.0),
             cand("zero.md", similarity=0.2, bm25_score=0.0)]
    got = by_path(rank_candidates(items, prof, now=NOW))
    assert (got["neg.md"].scores.vector, got["neg.md"].scores.lexical) == (0.0, 0.2)
    assert (got["big.md"].scores.vector, got["big.md"].scores.lexical) == (1.0, 1.0)
    assert got["zero.md"].scores.lexical == 0.0


def test_all_bm25_zero_gives_lexical_zero_not_division_error():
    got = rank_candidates([cand(bm25_score=0.0)], Profile(), now=NOW)
    assert got[0].scores.lexical == 0.0


@pytest.mark.parametrize(("value", "expected"), [
    ("2024-01-21", 0.5),                 # one half-life
    ("2024-01-11T00:00:00+00:00", 0.25),  # two half-lives
    (date(2024, 1, 21), 0.5),
    (datetime(2024, 1, 21), 0.5),        # naive → UTC
    ("2030-01-01", 1.0),                 # future: fresh, never above 1
    ("not a date", FRESHNESS_UNKNOWN),
    (None, FRESHNESS_UNKNOWN),
    (17, FRESHNESS_UNKNOWN),
])
def test_freshness_decay(value, expected):
    assert freshness({"date": value}, 10.0, NOW) == pytest.approx(expected)


def test_parse_date_keeps_timezones():
    assert parse_date("2024-01-01T12:00:00+02:00") == datetime(2024, 1, 1, 10, tzinfo=UTC)


def test_risk_penalty_scales_final_and_is_clamped():
    prof = Profile(w_cosine=1.0, w_bm25=0.0, w_freshness=0.0, risk_penalty=0.5)
    got = by_path(rank_candidates([cand("safe.md", similarity=0.8), cand("risky.md", similarity=0.8, risk_score=1.0),
                                   cand("over.md", similarity=0.8, risk_score=3.0)], prof, now=NOW))
    assert got["safe.md"].scores.final == pytest.approx(0.8)
    assert got["risky.md"].scores.penalty == pytest.approx(0.5)
    assert got["risky.md"].scores.final == pytest.approx(0.4)
    assert got["over.md"].scores.final == pytest.approx(0.4)


def test_persona_multiplier_and_unknown_persona():
    prof = Profile(w_cosine=1.0, w_bm25=0.0, w_freshness=0.0, persona_weights={"Engineer": 2.0})
    got = by_path(rank_candidates([cand("e.md", similarity=0.5, metadata={"persona": "engineer"}),
                                   cand("x.md", similarity=0.5, metadata={"persona": "sales"})], prof, now=NOW))
    assert got["e.md"].scores.final == pytest.approx(1.0)
    assert got["x.md"].scores.weights_applied["persona"] == 1.0


def test_metadata_boost_only_for_listed_doc_types():
    prof = get_profile("decisions_recent")
    got = by_path(rank_candidates([cand("p.md", bm25_score=1.0, metadata={"doc_type": "policy"}),
                                   cand("b.md", bm25_score=1.0, metadata={"doc_type": "blog"})], prof, now=NOW))
    assert got["p.md"].scores.weights_applied["metadata"] == 1.0
    assert got["b.md"].scores.weights_applied["metadata"] == 0.0
    assert got["p.md"].scores.fused - got["b.md"].scores.fused == pytest.approx(0.10)


def test_per_source_cap_keeps_the_best_chunks_per_document():
    items = [cand("a.md", i, similarity=s) for i, s in enumerate((0.2, 0.9, 0.5, 0.7))]
    items += [cand("a.md", 0, similarity=0.1, vault="other"), cand("b.md", 0, similarity=0.3)]
    result = rank_candidates(items, P, now=NOW)  # cap 2
    kept = [(r.candidate.vault, r.candidate.source_path, r.candidate.ordinal) for r in result]
    assert kept == [("v", "a.md", 1), ("v", "a.md", 3), ("v", "b.md", 0), ("other", "a.md", 0)]


def test_duplicates_of_one_chunk_keep_the_best_score():
    low, high = cand("a.md", 3, similarity=0.2), cand("a.md", 3, similarity=0.9)
    result = rank_candidates([low, high], P, now=NOW)
    assert len(result) == 1 and result[0].candidate is high


def test_ties_order_by_source_path_then_ordinal_and_ignore_input_order():
    prof = Profile(w_cosine=1.0, w_bm25=0.0, w_freshness=0.0, per_source_cap=10)
    items = [cand(p, o, similarity=0.5) for p in ("b.md", "a.md") for o in (2, 0, 1)]
    expected = [("a.md", 0), ("a.md", 1), ("a.md", 2), ("b.md", 0), ("b.md", 1), ("b.md", 2)]
    for seed in range(5):
        shuffled = items[:]
        random.Random(seed).shuffle(shuffled)
        got = [(r.candidate.source_path, r.candidate.ordinal) for r in rank_candidates(shuffled, prof, now=NOW)]
        assert got == expected


def test_empty_input_and_naive_now():
    assert rank_candidates([], P) == []
    got = rank_candidates([cand(similarity=0.5, metadata={"date": "2024-01-21"})], P, now=datetime(2024, 1, 31))
    assert got[0].scores.weights_applied["freshness"] == pytest.approx(0.5)
