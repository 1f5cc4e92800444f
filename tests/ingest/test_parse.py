from __future__ import annotations

import json

import pytest

from rag.ingest.parse import (
    CONFIDENTIALITY_LEVELS,
    confidentiality_rank,
    normalise_line_endings,
    parse_document,
)


def test_full_frontmatter() -> None:
    text = (
        "---\n"
        "title: Hybrid search\n"
        "date: 2024-03-05\n"
        "project: ragpg\n"
        "tags: [search, '#postgres', search, bm25]\n"
        "confidentiality: Internal\n"
        "doc_type: design\n"
        "persona: engineer\n"
        "url: https://example.com/x\n"
        "aliases: [hybrid, fusion]\n"
        "reviewed: 2024-03-06T10:30:00\n"
        "nested: {when: 2024-01-01, n: [1, 2.5, null, true]}\n"
        "---\n"
        "# Heading not used as title\n"
        "Body text é\n"
    )
    doc = parse_document(text, "notes/search.md")
    assert doc.title == "Hybrid search"
    assert doc.date == "2024-03-05"
    assert doc.project == "ragpg"
    assert doc.tags == ["search", "postgres", "bm25"]
    assert doc.confidentiality == "internal"
    assert (doc.doc_type, doc.persona, doc.url) == ("design", "engineer", "https://example.com/x")
    assert doc.aliases == ["hybrid", "fusion"]
    assert doc.warnings == []
    assert doc.frontmatter["date"] == "2024-03-05"
    assert doc.frontmatter["reviewed"] == "2024-03-06T10:30:00"
    assert doc.frontmatter["nested"] == {"when": "2024-01-01", "n": [1, 2.5, None, True]}
    json.dumps(doc.frontmatter, allow_nan=False)  # jsonb-safe
    assert doc.body_start_line == 13
    lines = text.split("\n")
    assert lines[doc.body_start_line] == "# Heading not used as title"
    assert text.encode()[doc.body_start_byte:].decode().startswith("# Heading not used as title")
    assert doc.body(text) == "# Heading not used as title\nBody text é\n"


def test_body_offsets_with_multibyte_frontmatter_and_crlf() -> None:
    text = "---\r\ntitle: Crème brûlée 漢字\r\n...\r\nbody line\r\n"
    doc = parse_document(text, "x.md")
    assert doc.title == "Crème brûlée 漢字"
    assert doc.body_start_line == 3
    assert normalise_line_endings(text).encode()[doc.body_start_byte:] == b"body line\n"
    assert doc.body(text) == "body line\n"


def test_title_fallbacks() -> None:
    assert parse_document("intro\n\n# First H1 #\n## Sub\n", "a/b.md").title == "First H1"
    assert parse_document("```\n# not a title\n```\n# Real\n", "a/b.md").title == "Real"
    assert parse_document("## only h2\nplain\n", "dir/My Note.md").title == "My Note"
    assert parse_document("---\ntitle: ''\n---\n# From heading\n", "x.md").title == "From heading"


def test_tags_and_aliases_as_strings() -> None:
    doc = parse_document("---\ntags: '#a, b  #c,a'\naliases: Big Thing, other\n---\n", "x.md")
    assert doc.tags == ["a", "b", "c"]
    assert doc.aliases == ["Big Thing", "other"]
    assert parse_document("---\ntag: solo\nalias: [x, 3]\n---\n", "x.md").tags == ["solo"]
    assert parse_document("---\nalias: [x, 3]\n---\n", "x.md").aliases == ["x", "3"]


@pytest.mark.parametrize(
    ("frontmatter", "expected"),
    [
        ("date: 2024-02-29", "2024-02-29"),
        ("date: '2024-02-29'", "2024-02-29"),
        ("date: 2024-02-29 08:15:00", "2024-02-29"),
        ("created: '2023/7/4'", "2023-07-04"),
        ("created: 2023-07-04T10:00:00Z", "2023-07-04"),
        ("date: ''\ncreated: 2022-01-02", "2022-01-02"),
        ("other: 1", None),
    ],
)
def test_dates(frontmatter: str, expected: str | None) -> None:
    doc = parse_document(f"---\n{frontmatter}\n---\nbody\n", "x.md")
    assert doc.date == expected
    assert doc.warnings == []


def test_unparseable_date_is_warned_not_fatal() -> None:
    doc = parse_document("---\ndate: next tuesday\n---\nbody\n", "n/d.md")
    assert doc.date is None
    assert doc.warnings == ["unparseable date in n/d.md: date: 'next tuesday' (indexed without a date)"]
    assert parse_document("---\ndate: '2024-02-30'\n---\n", "x.md").date is None


def test_confidentiality_levels() -> None:
    assert CONFIDENTIALITY_LEVELS == ("public", "internal", "confidential", "restricted")
    assert parse_document("no frontmatter\n", "x.md").confidentiality == "public"
    assert parse_document("---\nconfidentiality: RESTRICTED\n---\n", "x.md").confidentiality == "restricted"
    unknown = parse_document("---\nconfidentiality: top-secret\n---\n", "s.md")
    assert unknown.confidentiality == "restricted"  # fail closed
    assert unknown.warnings == ["unknown confidentiality in s.md: 'top-secret' (treated as restricted)"]
    assert [confidentiality_rank(level) for level in CONFIDENTIALITY_LEVELS] == [0, 1, 2, 3]


def test_broken_yaml_reported_and_body_kept() -> None:
    text = "---\ntitle: ok\nbad: [unclosed\n---\n# Still indexed\nbody\n"
    doc = parse_document(text, "notes/x.md")
    assert len(doc.warnings) == 1
    assert doc.warnings[0].startswith("broken frontmatter in notes/x.md: ")
    assert doc.frontmatter == {}
    assert doc.body_start_line == 4
    assert doc.body(text) == "# Still indexed\nbody\n"
    assert doc.title == "Still indexed"


def test_yaml_error_names_the_file_line() -> None:
    doc = parse_document("---\na: 1\nb: c: d\n---\nbody\n", "n.md")
    assert doc.warnings == ["broken frontmatter in n.md: mapping values are not allowed here (line 3) (treated as restricted)"]


def test_frontmatter_that_is_not_a_mapping_keeps_all_text() -> None:
    """Two thematic breaks around prose look like fences; losing that prose would be worse."""
    text = "---\nSome intro prose\n---\nbody\n"
    doc = parse_document(text, "rule.md")
    assert doc.warnings == ["broken frontmatter in rule.md: expected a mapping, got str (treated as restricted)"]
    assert (doc.body_start_line, doc.body_start_byte) == (0, 0)
    assert doc.body(text) == text
    listed = parse_document("---\n- a\n- b\n---\nbody\n", "list.md")
    assert listed.warnings == ["broken frontmatter in list.md: expected a mapping, got list (treated as restricted)"]


def test_no_closing_fence_keeps_whole_file_as_body() -> None:
    text = "---\ntitle: x\nno end fence here\n"
    doc = parse_document(text, "open.md")
    assert doc.warnings == ["broken frontmatter in open.md: no closing '---' fence (treated as restricted)"]
    assert (doc.body_start_line, doc.body_start_byte) == (0, 0)
    assert doc.title == "open"


def test_alias_bomb_is_rejected_not_expanded() -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join(f'*a{i - 1}' for _ in range(10))}]" for i in range(1, 9)]
    doc = parse_document("---\n" + "\n".join(lines) + "\n---\nbody\n", "bomb.md")
    assert doc.frontmatter == {}
    assert doc.warnings and "too many values" in doc.warnings[0]


def test_empty_frontmatter_and_bom() -> None:
    doc = parse_document("\ufeff---\n---\nbody\n", "b.md")
    assert doc.warnings == [] and doc.frontmatter == {}
    assert doc.body("\ufeff---\n---\nbody\n") == "body\n"
    assert doc.body_start_byte == len("\ufeff---\n---\n".encode())


def test_closing_fence_at_end_of_file_without_newline() -> None:
    text = "---\ntitle: t\n---"
    doc = parse_document(text, "t.md")
    assert doc.body_start_byte == len(text.encode())
    assert doc.body(text) == ""
    assert doc.title == "t"


def test_non_scalar_fields_are_ignored() -> None:
    doc = parse_document("---\ntitle: [a, b]\nproject: {x: 1}\ntags: {a: 1}\n---\n", "dir/n.md")
    assert doc.title == "n" and doc.project is None and doc.tags == []
