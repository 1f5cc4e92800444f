"""Property: whatever the frontmatter (random YAML, broken YAML, wrong types for every known key), the
confidentiality parse_document gives (and the indexer stores) is never lower than what the text asked for."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from hypothesis import example, given, settings
from hypothesis import strategies as st

from rag.ingest.parse import CONFIDENTIALITY_LEVELS, confidentiality_rank, parse_document

KNOWN_KEYS = ("title", "date", "created", "project", "tags", "tag", "doc_type", "type", "persona", "url",
              "aliases", "alias")
level = st.sampled_from(CONFIDENTIALITY_LEVELS)
scalar = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), st.text(max_size=12),
                   st.dates().map(str), st.just("2026-02-30"))
value = st.recursive(scalar, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
    st.text(max_size=6), inner, max_size=3), max_leaves=8)
# How the text spells the level it asks for: plain, odd case, or a wrong type around it.
spelled = st.sampled_from(["{}", "{}", "{}".upper(), "'{}'", "[{}]", "{{level: {}}}", " {} ", "!!str {}"])
BREAKAGE = ["bad: [unclosed\n", "\tindented: tab\n", "x: y: z\n", "- list item\n", "&anchor\n", "? \n",
            "a: *missing\n", "!!int nope: 1\n", "k: !!binary '%%%'\n"]


@st.composite
def frontmatter(draw: st.DrawFn) -> tuple[str, int]:
    """(document text, rank of the level it asks for)."""
    fields: dict[str, Any] = draw(st.dictionaries(st.sampled_from(KNOWN_KEYS), value, max_size=6))
    body = yaml.safe_dump(fields, allow_unicode=True, sort_keys=False) if fields else ""
    asked = draw(level)
    line = f"{draw(st.sampled_from(['confidentiality', 'Confidentiality', 'CONFIDENTIALITY']))}: " \
           f"{draw(spelled).format(asked)}\n"
    lines = [*body.splitlines(keepends=True)]
    lines.insert(draw(st.integers(0, len(lines))), line)
    if draw(st.booleans()):  # a second statement of the level: the stricter of the two counts
        other = draw(level)
        lines.insert(draw(st.integers(0, len(lines))), f"confidentiality: {other}\n")
        asked = max(asked, other, key=CONFIDENTIALITY_LEVELS.index)
    if draw(st.booleans()):
        lines.insert(draw(st.integers(0, len(lines))), draw(st.sampled_from(BREAKAGE)))
    close = draw(st.sampled_from(["---\n", "...\n", ""]))  # "" = no closing fence
    return "---\n" + "".join(lines) + close + "body text\n", CONFIDENTIALITY_LEVELS.index(asked)


# Found by this test in CI: the level's line sits inside a quoted multi-line key, so YAML has no
# top-level confidentiality at all; the text still asked for one.
NESTED_IN_A_KEY = ("---\ntitle:\n  ? ''\n  : null\n  ? '\n  confidentiality: internal\n\n      '\n  : null\n---\n"
                   "body text\n", CONFIDENTIALITY_LEVELS.index("internal"))


# Found by this test later: a top-level public level, and a stricter one inside a quoted key.
BESIDE_A_TOP_LEVEL_ONE = ("---\nconfidentiality: public\ntitle:\n  ? '\n  confidentiality: internal\n\n      '\n"
                          "  : null\n---\nbody text\n", CONFIDENTIALITY_LEVELS.index("internal"))


@settings(max_examples=400, deadline=None)
@given(frontmatter())
@example(NESTED_IN_A_KEY)
@example(BESIDE_A_TOP_LEVEL_ONE)
def test_stored_level_is_never_lower_than_asked(case: tuple[str, int]) -> None:
    text, asked = case
    doc = parse_document(text, "n.md")
    assert confidentiality_rank(doc.confidentiality) >= asked, (text, doc.confidentiality, doc.warnings)
    if doc.failed_closed:  # every fail-closed note is warned about, naming the file
        assert any("n.md" in w and "treated as restricted" in w for w in doc.warnings)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_arbitrary_text_never_crashes_and_confidentiality_is_a_known_level(text: str) -> None:
    doc = parse_document("---\n" + text, "r.md")
    assert doc.confidentiality in CONFIDENTIALITY_LEVELS


# --- front matter in a form the parser does not take (issue 29) ----------------------------------

LOOKALIKES = {
    "toml": "+++\nconfidentiality = 'restricted'\n+++\nbody text\n",
    "blank first line": "\n---\nconfidentiality: restricted\n---\nbody text\n",
    "space before the fence": " ---\nconfidentiality: restricted\n---\nbody text\n",
    "tab before the fence": "\t---\nconfidentiality: restricted\n---\nbody text\n",
    "bom then blank line": "\ufeff\n---\nconfidentiality: restricted\n---\nbody text\n",
    "no fences at all": "confidentiality: restricted\ntitle: plan\n\nbody text\n",
    "public in toml": "+++\nconfidentiality = 'public'\n+++\nbody text\n",
    # after a parsed block: a level Obsidian reads (it closes front matter with '---' only) or a second
    # block, as a template applied to a note that already had front matter leaves it
    "after a block closed by dots": "---\ntitle: Dot close\n...\nconfidentiality: restricted\n---\nbody text\n",
    "a second block": "---\ntitle: Two blocks\n---\n---\nconfidentiality: restricted\n---\nbody text\n",
    "a second block after an empty one": "---\n---\nconfidentiality: restricted\n---\nbody text\n",
    "a second block with a spaced fence": "---\ntitle: x\n---\n--- \nconfidentiality: internal\n---\nbody text\n",
    # a key that only looks like the level's key, or misspells it
    "zero-width space in the key": "---\nconfiden\u200btiality: restricted\n---\nbody text\n",
    "cyrillic i in the key": "---\nconf\u0456dentiality: restricted\n---\nbody text\n",
    "fullwidth key": "---\n\uff43onfidentiality: restricted\n---\nbody text\n",
    "misspelt key": "---\nconfidentialty: restricted\n---\nbody text\n",
    # both at once: a second block whose key only looks like the level's (found by hand after the fixes)
    "a second block with a zero-width key": "---\ntitle: x\n---\n---\nconfiden\u200btiality: restricted\n---\nbody text\n",
    "no fences and a cyrillic key": "conf\u0456dentiality: restricted\n\nbody text\n",
}


@pytest.mark.security
@pytest.mark.parametrize("name", LOOKALIKES)
def test_lookalike_front_matter_fails_closed_with_a_warning(name: str) -> None:
    doc = parse_document(LOOKALIKES[name], "notes/plan.md")
    assert doc.confidentiality == "restricted" and doc.failed_closed
    assert [w for w in doc.warnings if "notes/plan.md" in w and "(treated as restricted)" in w]
    assert "body text" in doc.body(LOOKALIKES[name])  # nothing is lost: the whole note is indexed


# Issue 47: a key other than `confidentiality` that names a level, or flags the note as confidential,
# was stored public. Each fails closed.
SYNONYMS = {
    "classification": "---\nclassification: restricted\n---\nbody text\n",
    "classification with a space": "---\nClassification Level: secret\n---\nbody text\n",
    "confidential flag": "---\nconfidential: true\n---\nbody text\n",
    "confidential yes": "---\nConfidential: yes\n---\nbody text\n",
    "sensitivity": "---\nsensitivity: high\n---\nbody text\n",
    "secret flag": "---\nsecret: true\n---\nbody text\n",
    "private flag": "---\nprivate: true\n---\nbody text\n",
    "restricted flag": "---\nrestricted: 1\n---\nbody text\n",
    "security level": "---\nsecurity_level: internal\n---\nbody text\n",
    "clearance": "---\nclearance: confidential\n---\nbody text\n",
    "confidentiality level": "---\nconfidentiality-level: internal\n---\nbody text\n",
    "data classification": "---\ndata_classification: confidential\n---\nbody text\n",
    "tlp": "---\nTLP: amber\n---\nbody text\n",
    "an empty classification": "---\nclassification:\n---\nbody text\n",
    "a cyrillic classification": "---\n\u0441lassification: restricted\n---\nbody text\n",
    "a lower level beside it": "---\nconfidentiality: public\nclassification: restricted\n---\nbody text\n",
    # the same outside parsed front matter: no fences, or just below them
    "no fences": "classification: restricted\ntitle: plan\n\nbody text\n",
    "a flag without fences": "Secret: yes\n\nbody text\n",
    "below the front matter": "---\ntitle: x\n---\nclassification: confidential\n\nbody text\n",
}


@pytest.mark.security
@pytest.mark.parametrize("name", SYNONYMS)
def test_a_key_that_names_a_level_or_flags_a_secret_fails_closed(name: str) -> None:
    doc = parse_document(SYNONYMS[name], "notes/plan.md")
    assert doc.confidentiality == "restricted" and doc.failed_closed
    assert [w for w in doc.warnings if "notes/plan.md" in w and "(treated as restricted)" in w]


@pytest.mark.parametrize("text", [
    "---\nclassification: public\n---\nbody text\n",
    "---\nprivate: false\nsecret: no\nconfidential: off\n---\nbody text\n",
    "---\npublish: false\npermalink: x\ncssclasses: [wide]\n---\nbody text\n",  # Obsidian's own keys
    "---\nconfidentiality: internal\nsensitivity: public\n---\nbody text\n",
    "Security: see the team page.\n\nbody text\n",  # prose: the value names no level
    "Privacy: we never share your data.\n\nbody text\n",
    "Secret: false\n\nbody text\n",
])
def test_a_key_that_says_public_or_no_changes_nothing(text: str) -> None:
    doc = parse_document(text, "n.md")
    assert not doc.failed_closed and doc.warnings == []


def test_no_help_vault_note_changes_level(shared_data) -> None:
    root = shared_data / "obsidian-help"
    if not root.is_dir():
        pytest.skip(f"{root} is absent")
    levels = {p.name: parse_document(p.read_text(encoding="utf-8"), p.name).confidentiality
              for p in root.rglob("*.md")}
    assert len(levels) > 100 and set(levels.values()) == {"public"}


@pytest.mark.security
@pytest.mark.parametrize("text", [
    "---\rconfidentiality: restricted\r---\rbody text\r",  # CR-only (classic Mac)
    "---\r\nconfidentiality: restricted\r\n---\r\nbody text\r\n",  # CRLF
    "\ufeff---\nconfidentiality: restricted\n---\nbody text\n",  # BOM
    "\ufeff---\r\nconfidentiality: restricted\r\n---\r\nbody text\r\n",
])
def test_front_matter_with_any_line_ending_parses(text: str) -> None:
    doc = parse_document(text, "n.md")
    assert doc.confidentiality == "restricted" and not doc.failed_closed and doc.warnings == []
    assert doc.body(text) == "body text\n" and doc.body_start_line == 3


@pytest.mark.parametrize("text", [
    "---\ntitle: Plan\nconfidentiality: internal\n---\nbody text\n",
    "# Plan\n\nbody text\n",
    "plain words first\n\n---\n\nmore\n",
    "---\ntitle: Plan\n---\n---\n\nA thematic break under the properties, then text.\n",
    "",
])
def test_ordinary_notes_are_unchanged(text: str) -> None:
    doc = parse_document(text, "n.md")
    assert not doc.failed_closed and doc.warnings == []
    assert doc.confidentiality in ("public", "internal")
