"""The signals of the answer/abstain decision and the model over them (`rag.notes.signals`): each signal
moves p(answerable) in the direction of its weight and can flip the decision; signals computed from
ranked passages and term statistics. How a decision is said: tests/notes/test_decision.py.

The weights here are the tests' own: the defaults are refitted on the golden set's dev split."""

from __future__ import annotations

import math
from dataclasses import fields, replace

import pytest

from rag.config import NotesSettings
from rag.errors import ConfigError
from rag.notes.signals import (
    SIGNALS,
    AbstainSignals,
    collect_signals,
    missing_names,
    p_answerable,
    term_signals,
)
from rag.retrieval.terms import TermStat
from rag.types import Candidate, RankedChunk, ScoreBreakdown

WEIGHTS = {"top_final": 2.5, "margin": 1.5, "top_similarity": 2.0, "sentence_similarity": 3.0,
           "term_coverage": 3.5, "unknown_share": -5.0, "leg_agreement": 1.0, "top_bm25": 1.0,
           "rarest_missing": -2.0, "passage_coverage": 2.0, "names_missing": -3.0}
BASE = AbstainSignals(top_final=0.5, margin=0.1, top_similarity=0.5, sentence_similarity=0.4, term_coverage=0.5,
                      unknown_share=0.2, leg_agreement=0.5, top_bm25=1.0, rarest_missing=0.5, passage_coverage=0.4,
                      names_missing=0.4)
# Just under the threshold: z = -0.1, so the base case abstains and a step of 0.2 on any signal
# (|weight| >= 1) moves z by at least 0.2, enough to cross zero.
BIAS = -(sum(WEIGHTS[n] * getattr(BASE, n) for n in SIGNALS)) - 0.1
STEP = 0.2


def p(signals: AbstainSignals, weights: dict[str, float] = WEIGHTS, bias: float = BIAS) -> float:
    return p_answerable(signals, weights, bias)


def abstains(signals: AbstainSignals, weights: dict[str, float] = WEIGHTS, bias: float = BIAS) -> bool:
    return p(signals, weights, bias) < 0.5


def test_the_signals_are_the_design_s_seven_plus_four_and_the_settings_know_them():
    assert SIGNALS == ("top_final", "margin", "top_similarity", "sentence_similarity", "term_coverage",
                       "unknown_share", "leg_agreement", "top_bm25", "rarest_missing", "passage_coverage",
                       "names_missing")
    assert tuple(f.name for f in fields(AbstainSignals)) == SIGNALS


def test_a_misspelt_weight_is_refused_when_the_settings_load(tmp_path):
    from rag.config import load_settings

    with pytest.raises(ValueError, match="unknown signal 'term_coverag'"):
        NotesSettings(abstain_weights={"term_coverag": 1.0})
    config = tmp_path / "config.toml"
    config.write_text("[notes.abstain_weights]\nunknown_shares = -3.0\n")
    with pytest.raises(ConfigError, match="unknown signal 'unknown_shares'"):
        load_settings(config)


def test_probability_is_the_logistic_of_the_weighted_sum():
    assert p(BASE) == pytest.approx(1 / (1 + math.exp(0.1)))
    assert abstains(BASE)
    assert p(BASE, bias=BIAS + 0.1) == pytest.approx(0.5)  # exactly at the threshold it answers
    # extreme sums do not overflow
    assert p(BASE, bias=1e6) == 1.0
    assert p(BASE, bias=-1e6) == pytest.approx(0.0)


@pytest.mark.parametrize("name", SIGNALS)
def test_each_signal_alone_moves_p_in_the_direction_of_its_weight_and_can_flip_the_decision(name):
    sign = 1 if WEIGHTS[name] > 0 else -1
    up = replace(BASE, **{name: getattr(BASE, name) + STEP})
    down = replace(BASE, **{name: getattr(BASE, name) - STEP})
    assert (p(up) - p(BASE)) * sign > 0 and (p(down) - p(BASE)) * sign < 0
    favourable, unfavourable = (up, down) if sign > 0 else (down, up)
    assert abstains(BASE)
    assert not abstains(favourable)  # flipped to answering
    assert abstains(unfavourable)
    # the direction is the weight's, not the signal's: with the sign turned, so is the effect
    turned = {**WEIGHTS, name: -WEIGHTS[name]}
    turned_bias = -(sum(turned[n] * getattr(BASE, n) for n in SIGNALS)) - 0.1
    assert (p(up, turned, turned_bias) - p(BASE, turned, turned_bias)) * sign < 0
    # and a signal without a weight does not count at all
    absent = {k: v for k, v in WEIGHTS.items() if k != name}
    assert p(up, absent) == pytest.approx(p(BASE, absent))


def test_unknown_words_make_it_abstain_however_close_the_passages_look():
    strong = AbstainSignals(top_final=0.8, margin=0.3, top_similarity=0.8, sentence_similarity=0.6,
                            term_coverage=1.0, unknown_share=0.0, leg_agreement=1.0)
    weights, bias = {"term_coverage": 4.0, "unknown_share": -4.0, "top_similarity": 1.0}, -3.0
    assert not abstains(strong, weights, bias)
    near_miss = replace(strong, term_coverage=0.4, unknown_share=0.6)  # same cosine, words never used
    assert abstains(near_miss, weights, bias)


def test_a_sentence_similarity_not_read_counts_nothing_and_is_not_reported():
    unread = replace(BASE, sentence_similarity=None)
    without = {k: v for k, v in WEIGHTS.items() if k != "sentence_similarity"}
    assert p(unread, without) == pytest.approx(p(BASE, without))
    assert "sentence_similarity" not in unread.as_dict() and set(BASE.as_dict()) == set(SIGNALS)


def test_a_name_is_mentioned_as_written_in_any_case_or_by_its_stems():
    passages = ["Export your notes to PDF from the command palette.", "Sync with a yubikey on iOS."]
    assert missing_names(["PDFs", "YubiKey", "Joplin", "iOS"], passages) == ["Joplin"]
    assert missing_names([], passages) == []
    # a number counts only as written: "1.1" is not "1" twice, however many passages hold a 1
    numbered = ["Step 1: open the outline.", "Headings 1 to 6."]
    assert missing_names(["1.1", "1", "Node 22"], numbered) == ["1.1", "Node 22"]


# -- term statistics -----------------------------------------------------------------------------

def idf(df: int, n: int) -> float:
    return math.log(1 + (n + 1) / (df + 1))


def test_term_signals_weigh_words_by_rarity():
    # chunk 1 holds "sync" and "librari", chunk 2 only "librari", chunk 3 only "sync" (Postgres' analysis)
    stats = [TermStat("sync", 40, 100, [1, 3]), TermStat("librari", 2, 100, [1, 2]), TermStat("zebra", 0, 100)]
    coverage, unknown, rarest = term_signals(stats, [1])
    total = idf(40, 100) + idf(2, 100) + idf(0, 100)
    # both words are in chunk 1; "zebra" is nowhere in the vaults
    assert coverage == pytest.approx((idf(40, 100) + idf(2, 100)) / total)
    assert unknown == pytest.approx(idf(0, 100) / total)
    # the rarest word missing from the passages is "zebra": its idf over the largest possible idf
    assert rarest == pytest.approx(idf(0, 100) / math.log(1 + 100 + 1))
    # a rare word missing from the passages costs more than a common one
    rare_missing, _, rarest_a = term_signals(stats[:2], [3])
    common_missing, _, rarest_b = term_signals(stats[:2], [2])
    assert rare_missing < 0.5 < common_missing
    assert rarest_a > rarest_b > 0  # "librari" missing is rarer than "sync" missing
    assert term_signals(stats[:2], [2, 3])[0] == pytest.approx(1.0)  # together they hold both


def test_term_signals_without_terms_are_zero():
    assert term_signals([], [1]) == (0.0, 0.0, 0.0)
    coverage, unknown, rarest = term_signals([TermStat("sync", 1, 10, [1])], [])
    assert (coverage, unknown) == (0.0, 0.0) and rarest == pytest.approx(idf(1, 10) / math.log(1 + 10 + 1))


# -- signals from ranked passages -------------------------------------------------------------------

def ranked(path: str, ordinal: int, final: float, *, sim: float | None, vector_rank: int | None,
           lexical_rank: int | None, content: str = "text", rank: int = 1) -> RankedChunk:
    c = Candidate(chunk_id=hash((path, ordinal)) % 10_000, vault="v", source_path=path, ordinal=ordinal,
                  heading_path="# Head", content=content, metadata={}, similarity=sim,
                  vector_rank=vector_rank, lexical_rank=lexical_rank)
    return RankedChunk(c, ScoreBreakdown(vector=sim, lexical=None, fused=final, final=final), rank)


def test_collect_signals_from_the_top_passages():
    items = [
        ranked("a.md", 0, 0.80, sim=0.70, vector_rank=1, lexical_rank=2, content="Sync keeps notes."),
        ranked("a.md", 1, 0.75, sim=0.72, vector_rank=2, lexical_rank=None),   # same note: not the margin
        ranked("b.md", 0, 0.55, sim=None, vector_rank=None, lexical_rank=1),   # lexical only
        ranked("c.md", 0, 0.50, sim=0.95, vector_rank=3, lexical_rank=3),      # beyond the top 3
    ]
    stats = [TermStat("sync", 3, 50, [items[0].candidate.chunk_id]), TermStat("zebra", 0, 50)]
    s = collect_signals(items, stats, 0.42, top_passages=3)
    assert s.top_final == 0.80
    assert s.margin == pytest.approx(0.80 - 0.55)  # over the best passage of another note
    assert s.top_similarity == 0.72  # the best among the top 3 (c.md's 0.95 is not among them)
    assert s.sentence_similarity == 0.42
    assert s.leg_agreement == pytest.approx(1 / 3)  # only a.md#0 was found by both legs
    assert s.term_coverage == pytest.approx(idf(3, 50) / (idf(3, 50) + idf(0, 50)))
    assert s.unknown_share == pytest.approx(idf(0, 50) / (idf(3, 50) + idf(0, 50)))
    assert s.passage_coverage == pytest.approx(s.term_coverage)  # a.md#0 alone holds the one known word
    assert s.names_missing == 0.0  # the question named nothing
    named = collect_signals(items, stats, 0.42, top_passages=3, names=["Sync", "YubiKey", "500"])
    assert named.names_missing == pytest.approx(2 / 3)  # "sync" is in a.md#0 (any case); the other two nowhere
    assert collect_signals(items, stats, 0.42, top_passages=4, names=["b.md"]).names_missing == 0.0  # paths count
    wider = collect_signals(items, stats, 0.42, top_passages=4)
    assert wider.top_similarity == 0.95 and wider.leg_agreement == pytest.approx(2 / 4)


def test_collect_signals_single_note_and_nothing():
    one = [ranked("a.md", 0, 0.6, sim=0.5, vector_rank=1, lexical_rank=1)]
    s = collect_signals(one, [], 0.3, top_passages=3)
    assert (s.margin, s.leg_agreement, s.term_coverage, s.unknown_share) == (0.6, 1.0, 0.0, 0.0)
    empty = collect_signals([], [], 0.0, top_passages=3)
    assert empty == AbstainSignals(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)


def test_specific_names_are_names_and_numbers_inside_a_sentence():
    from rag.notes.question import specific_names

    assert specific_names("Can I use a YubiKey or another hardware key as the second step?") == ["YubiKey"]
    assert specific_names("Does Obsidian Credit expire? Can I move it to Joplin's importer, e.g. for 500 words?") == [
        "Obsidian", "Credit", "Joplin", "500"]  # "Can" starts a sentence, "Joplin's" loses its 's
    assert specific_names("On my Chromebook, libnss3.so can't be opened. What's missing?") == ["Chromebook",
                                                                                                 "libnss3.so"]
    assert specific_names("how do i sync my notes with icloud") == []  # typed in lower case: nothing to check
