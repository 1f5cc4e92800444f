"""Context assembly: merging, de-duplication, the token budget and citations."""

from __future__ import annotations

from dataclasses import replace

import pytest

from rag.context.assemble import (
    DROP_DUPLICATE,
    DROP_EMPTY,
    DROP_OVER_BUDGET,
    GAP_JOIN,
    assemble_context,
    text_overlap,
)
from rag.errors import InputError
from rag.tokens import count_tokens
from tests.orchestrator.factory import cand, make_doc, ranked

BIG = 100_000
TEXT = "".join(f"word{i:03d} " for i in range(40))  # 320 chars, unique words


def refs(block):
    return [r.candidate.ref for r in block.chunks]


def test_overlapping_sliding_windows_become_one_exact_block():
    doc = make_doc("a.md", TEXT, window=60, stride=40)
    picked = [doc.chunks[2], doc.chunks[0], doc.chunks[1]]
    out = assemble_context(ranked(picked), budget_tokens=BIG)
    assert len(out.blocks) == 1
    block = out.blocks[0]
    assert block.text == doc.span(doc.chunks[0].start_byte, doc.chunks[2].end_byte)
    assert refs(block) == [c.ref for c in doc.chunks[:3]]  # document order
    assert out.citations[0].ordinals == (0, 1, 2)
    assert out.text.count("word045") <= 1 and out.text.count("word010") == 1


def test_touching_offsets_merge_and_bridging_joins_two_blocks():
    doc = make_doc("a.md", TEXT, window=40, stride=40)
    out = assemble_context(ranked([doc.chunks[0], doc.chunks[2], doc.chunks[1]]), budget_tokens=BIG)
    assert len(out.blocks) == 1
    assert out.blocks[0].text == doc.span(doc.chunks[0].start_byte, doc.chunks[2].end_byte)


def test_non_adjacent_chunks_of_one_document_are_separate_blocks_with_one_marker():
    doc = make_doc("a.md", TEXT, window=40, stride=40)
    out = assemble_context(ranked([doc.chunks[0], doc.chunks[5]]), budget_tokens=BIG)
    assert [b.marker for b in out.blocks] == ["S1", "S1"]
    assert len(out.citations) == 2


def test_consecutive_chunks_with_a_layout_gap_are_joined():
    a = cand("a.md", 0, "first part", start_byte=0, end_byte=10)
    b = cand("a.md", 1, "second part", start_byte=12, end_byte=23)
    out = assemble_context(ranked([a, b]), budget_tokens=BIG)
    assert [blk.text for blk in out.blocks] == ["first part" + GAP_JOIN + "second part"]


def test_without_offsets_consecutive_ordinals_splice_the_text_overlap():
    a = cand("a.md", 3, TEXT[:100])
    b = cand("a.md", 4, TEXT[70:180])
    c = cand("a.md", 6, TEXT[200:260])
    out = assemble_context(ranked([b, a, c]), budget_tokens=BIG)
    assert [blk.text for blk in out.blocks] == [TEXT[:180], TEXT[200:260]]
    assert out.citations[0].ordinals == (3, 4)


def test_without_offsets_and_no_overlap_consecutive_chunks_join_with_a_gap():
    out = assemble_context(ranked([cand("a.md", 0, "alpha beta"), cand("a.md", 1, "gamma delta")]), budget_tokens=BIG)
    assert out.blocks[0].text == "alpha beta" + GAP_JOIN + "gamma delta"


def test_offsets_that_do_not_match_the_text_are_ignored():
    a = cand("a.md", 0, TEXT[:100], start_byte=0, end_byte=90)  # length mismatch → not trusted
    b = cand("a.md", 1, TEXT[80:150], start_byte=80, end_byte=150)
    out = assemble_context(ranked([a, b]), budget_tokens=BIG)
    assert out.blocks[0].text == TEXT[:150]


@pytest.mark.parametrize(("a", "b", "expected"), [
    ("x" * 5 + "0123456789abcdefXYZ", "0123456789abcdefXYZ tail", 19),
    ("abc", "abcdef", 0),                        # below the minimum
    ("0123456789abcdef", "fedcba9876543210", 0),
    ("the same sixteen chars", "the same sixteen chars", 22),
])
def test_text_overlap(a, b, expected):
    assert text_overlap(a, b) == expected


def test_identical_text_from_another_source_is_dropped_keeping_the_best_ranked():
    best = cand("a.md", 0, "Shared   paragraph about retention.")
    copy = cand("b.md", 4, "shared paragraph about\nretention.")
    other = cand("c.md", 0, "something else")
    out = assemble_context(ranked([best, copy, other]), budget_tokens=BIG)
    assert [c.source_path for c in out.citations] == ["a.md", "c.md"]
    assert [c.marker for c in out.citations] == ["S1", "S2"]
    (dropped,) = out.dropped
    assert (dropped.chunk.candidate.ref, dropped.reason, dropped.duplicate_of) == (copy.ref, DROP_DUPLICATE, best.ref)


def test_empty_chunks_are_dropped():
    out = assemble_context(ranked([cand("a.md", 0, "  \n "), cand("b.md", 0, "text")]), budget_tokens=BIG)
    assert [d.reason for d in out.dropped] == [DROP_EMPTY]
    assert len(out.blocks) == 1


def test_header_format_and_citation_fields():
    c = cand("notes/a.md", 2, "body text", heading_path="Intro > Details",
             metadata={"title": "A  Title", "url": "https://x/a"}, start_line=3, end_line=9)
    out = assemble_context(ranked([c]), budget_tokens=BIG)
    assert out.text == "[S1] A Title — Intro › Details (lines 3-9)\nbody text"
    assert out.citations[0].model_dump(mode="json") == {
        "marker": "S1", "vault": "v", "source_path": "notes/a.md", "title": "A Title", "url": "https://x/a",
        "heading_path": "Intro > Details", "heading": "Intro › Details", "start_line": 3, "end_line": 9,
        "location": "lines 3-9", "chunk_refs": ["v/notes/a.md#2"], "ordinals": [2]}
    plain = assemble_context(ranked([cand("b.md", 0, "x")]), budget_tokens=BIG)
    assert plain.text == "[S1] b.md\nx"


def test_budget_skips_a_block_that_does_not_fit_and_takes_smaller_later_ones():
    big = cand("big.md", 0, "lorem ipsum " * 200)
    small = cand("small.md", 0, "short answer")
    budget = count_tokens("[S1] small.md\nshort answer")
    out = assemble_context(ranked([big, small]), budget_tokens=budget)
    assert [c.source_path for c in out.citations] == ["small.md"]
    assert out.used_tokens == count_tokens(out.text) == budget
    assert [(d.chunk.candidate.source_path, d.reason) for d in out.dropped] == [("big.md", DROP_OVER_BUDGET)]
    assert not out.insufficient


def test_budget_counts_headers_and_separators():
    items = ranked([cand(f"{i}.md", 0, f"fact number {i}") for i in range(3)])
    full = assemble_context(items, budget_tokens=BIG)
    tight = assemble_context(items, budget_tokens=full.used_tokens - 1)
    assert len(tight.blocks) == 2 and tight.used_tokens <= full.used_tokens - 1


def test_budget_smaller_than_any_block_is_insufficient_not_an_error():
    for budget in (0, 2):
        out = assemble_context(ranked([cand("a.md", 0, "some text here")]), budget_tokens=budget)
        assert (out.text, out.blocks, out.citations, out.used_tokens, out.insufficient) == ("", (), (), 0, True)
    assert assemble_context([], budget_tokens=100).insufficient


def test_negative_budget_is_an_input_error():
    with pytest.raises(InputError, match="budget_tokens"):
        assemble_context([], budget_tokens=-1)


def test_blocks_follow_the_best_rank_of_their_chunks():
    doc = make_doc("a.md", TEXT, window=40, stride=40)
    other = cand("b.md", 0, "unrelated")
    out = assemble_context(ranked([doc.chunks[3], other, doc.chunks[4]]), budget_tokens=BIG)
    assert [c.source_path for c in out.citations] == ["a.md", "b.md"]
    assert out.citations[0].ordinals == (3, 4)


def test_a_dropped_chunk_covered_later_by_its_neighbours_is_cited():
    doc = make_doc("a.md", TEXT, window=60, stride=30)
    copy = make_doc("copy.md", TEXT, window=60, stride=30)
    x, x_copy = doc.chunks[2], copy.chunks[2]
    # x_copy is a duplicate of x when it comes up; later copy chunks 1 and 3 cover its span.
    out = assemble_context(ranked([x, x_copy, copy.chunks[1], copy.chunks[3]]), budget_tokens=BIG)
    assert out.dropped == ()
    copy_block = next(b for b in out.blocks if b.citation.source_path == "copy.md")
    assert x_copy.ref in copy_block.citation.chunk_refs
    assert copy_block.text == copy.span(copy.chunks[1].start_byte, copy.chunks[3].end_byte)


@pytest.mark.parametrize("budget", [0, 25, 60, 61, 90, 400])
def test_index_time_token_counts_give_the_same_context_as_counting_afresh(budget):
    texts = ["Ends with a dot.", "  spaced  out  ", "line one\nline two!\n", "(parens) and 'quotes'", "日本語 text",
             "numbers 12345 and 3.14", "x"]
    plain = [cand(f"{i}.md", 0, t, heading_path="# H") for i, t in enumerate(texts)]
    counted = [replace(c, token_count=count_tokens(c.content)) for c in plain]
    fresh, stored = assemble_context(ranked(plain), budget_tokens=budget), assemble_context(ranked(counted), budget_tokens=budget)
    assert stored.text == fresh.text
    assert stored.used_tokens == fresh.used_tokens == count_tokens(stored.text) <= budget


def test_a_chunk_without_offsets_inside_a_spliced_block_joins_it():
    doc = make_doc("a.md", TEXT, window=60, stride=40)
    stripped = cand("a.md", 1, doc.chunks[1].content)  # same text, offsets unknown
    out = assemble_context(ranked([doc.chunks[0], doc.chunks[2], stripped, doc.chunks[3]]), budget_tokens=BIG)
    assert len(out.blocks) == 1
    assert out.blocks[0].text == doc.span(doc.chunks[0].start_byte, doc.chunks[3].end_byte)


def test_a_chunk_without_offsets_already_inside_a_block_is_cited_without_new_text():
    doc = make_doc("a.md", TEXT, window=60, stride=30)  # chunks 0 and 2 touch; 1 lies inside them
    stripped = cand("a.md", 1, doc.chunks[1].content)
    out = assemble_context(ranked([doc.chunks[0], doc.chunks[2], stripped]), budget_tokens=BIG)
    (block,) = out.blocks
    assert block.text == doc.span(doc.chunks[0].start_byte, doc.chunks[2].end_byte)
    assert block.citation.ordinals == (0, 1, 2)


def test_a_gap_join_makes_one_blank_line_whatever_the_chunk_ends_with():
    a = cand("a.md", 0, "# Title\n", start_byte=0, end_byte=8)
    b = cand("a.md", 1, "Body.\n", start_byte=9, end_byte=15)
    out = assemble_context(ranked([a, b]), budget_tokens=BIG)
    assert out.blocks[0].text == "# Title\n\nBody.\n"

