"""Golden file parsing: the happy path, and every malformed input naming file, line and case."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag.errors import InputError
from rag.eval import ChunkRef, GoldenError, load_golden, select_split
from tests.eval.fakes import write

VALID_YAML = """\
description: tiny set
defaults:
  vault: help
  k: 7
cases:
  - id: first
    query: "  how do I sync?  "
    must_include_source_paths: [Sync/Setup.md]
    acceptable_source_paths: ["./Sync/FAQ.md"]
    must_include_chunk_refs: ["Sync/Setup.md#3"]
    forbidden_claims: [sync is free]
    folder: [Sync, Help]
    filters: {doc_type: kb}
  - id: second
    query: boil an egg
    vault: [help, other]
    expect_abstain: true
    k: 3
"""


def test_valid_yaml_parses_fields_defaults_and_lines(tmp_path: Path) -> None:
    golden = load_golden(write(tmp_path / "g.yaml", VALID_YAML))
    first, second = golden.cases
    assert golden.description == "tiny set"
    assert (first.id, first.query, first.index, first.line) == ("first", "how do I sync?", 1, 6)
    assert first.must_include_source_paths == ("Sync/Setup.md",)
    assert first.acceptable_source_paths == ("Sync/FAQ.md",)  # "./" normalised away
    assert first.must_include_chunk_refs == (ChunkRef("Sync/Setup.md", 3),)
    assert first.forbidden_claims == ("sync is free",)
    assert first.folders == ("Sync", "Help")
    assert first.filters == {"doc_type": "kb"}
    assert (first.vaults, first.k, first.expect_abstain) == (("help",), 7, False)  # from defaults
    assert (second.vaults, second.k, second.expect_abstain, second.line) == (("help", "other"), 3, True, 14)
    assert golden.where(second) == f"{tmp_path / 'g.yaml'}:14: case 'second' (#2)"


def test_json_golden_parses_with_line_numbers(tmp_path: Path) -> None:
    data = {"cases": [{"id": "a", "query": "q1", "must_include_source_paths": ["x.md"]},
                      {"id": "b", "query": "q2", "expect_abstain": True}]}
    golden = load_golden(write(tmp_path / "g.json", json.dumps(data, indent=2)))
    assert [c.id for c in golden.cases] == ["a", "b"]
    assert [c.line for c in golden.cases] == [3, 10]  # json.dumps(indent=2) puts each case's "{" there


def _error(tmp_path: Path, text: str, name: str = "g.yaml") -> str:
    path = write(tmp_path / name, text)
    with pytest.raises(GoldenError) as info:
        load_golden(path)
    assert isinstance(info.value, InputError)  # exit code 2 in the CLI
    message = str(info.value)
    assert "\n" not in message and str(path) in message
    return message


CASE_A = "  - id: a\n    query: fine\n"


@pytest.mark.parametrize(
    ("field_line", "expected"),
    [
        ("    k: ten", "'k' must be a positive integer"),
        ("    k: 0", "'k' must be a positive integer"),
        ("    expect_abstain: yes please", "'expect_abstain' must be true or false"),
        ("    must_include_source_paths: Sync/Setup.md", "'must_include_source_paths' must be a list of strings"),
        ("    acceptable_source_paths: [1, 2]", "'acceptable_source_paths' must be a list of non-empty strings"),
        ("    must_include_source_paths: [/etc/passwd]", "'must_include_source_paths' has '/etc/passwd', which must be relative to the vault root"),
        ("    must_include_source_paths: [../outside.md]", "'must_include_source_paths' has '../outside.md', which must not contain '..'"),
        ("    must_include_chunk_refs: [Sync/Setup.md]", "'must_include_chunk_refs' has 'Sync/Setup.md', which must look like 'folder/note.md#3'"),
        ("    filters: [a, b]", "'filters' must be a mapping"),
        ("    forbidden_claims: ['']", "'forbidden_claims' must be a list of non-empty strings"),
        ("    querry: typo", "unknown key 'querry'"),
        ("    split: train", "'split' must be one of dev, test"),
        ("    expected_facts: Ctrl+P", "'expected_facts' must be a list of strings"),
        ("    expected_facts: ['!!!']", "'expected_facts' has '!!!', which must be a phrase of 1-6 words"),
        ("    expected_facts: [a b c d e f g]", "'expected_facts' has 'a b c d e f g', which must be a phrase of 1-6 words"),
        ("    tags: multi_hop", "'tags' must be a list of strings"),
    ],
)
def test_wrong_field_names_file_line_and_case(tmp_path: Path, field_line: str, expected: str) -> None:
    # The bad field is on line 6, inside case 'b' (#2) that starts on line 4.
    text = f"cases:\n{CASE_A}  - id: b\n    query: q\n{field_line}\n"
    message = _error(tmp_path, text)
    assert f"g.yaml:6: case 'b' (#2): {expected}" in message


def test_missing_query_names_the_case_line(tmp_path: Path) -> None:
    message = _error(tmp_path, f"cases:\n{CASE_A}  - id: b\n    must_include_source_paths: [x.md]\n")
    assert "g.yaml:4: case 'b' (#2): missing required key 'query'" in message


def test_missing_id_names_the_case_index(tmp_path: Path) -> None:
    message = _error(tmp_path, f"cases:\n{CASE_A}  - query: no id\n")
    assert "g.yaml:4: case (#2): missing required key 'id'" in message


def test_empty_query_is_rejected(tmp_path: Path) -> None:
    assert "'query' must be a non-empty string" in _error(tmp_path, "cases:\n  - id: a\n    query: '   '\n")


def test_duplicated_ids_name_both_cases(tmp_path: Path) -> None:
    message = _error(tmp_path, f"cases:\n{CASE_A}  - id: z\n    query: other\n{CASE_A}")
    assert "g.yaml:6: case 'a' (#3): duplicate id, first used by case #1 (line 2)" in message


def test_duplicate_key_inside_a_case_is_rejected(tmp_path: Path) -> None:
    message = _error(tmp_path, "cases:\n  - id: a\n    query: one\n    query: two\n")
    assert "g.yaml:4: duplicate key 'query'" in message


def test_abstain_case_with_expected_sources_is_contradictory(tmp_path: Path) -> None:
    text = "cases:\n  - id: a\n    query: q\n    expect_abstain: true\n    must_include_source_paths: [x.md]\n"
    assert "expect_abstain is true, so it must not list expected sources" in _error(tmp_path, text)


def test_path_both_must_and_acceptable_is_rejected(tmp_path: Path) -> None:
    text = "cases:\n  - id: a\n    query: q\n    must_include_source_paths: [x.md]\n    acceptable_source_paths: [x.md]\n"
    assert "'x.md' is listed as both must_include and acceptable" in _error(tmp_path, text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("cases: [\n  {id: a\n", "invalid YAML"),
        ("- just\n- a list\n", "must be a mapping with a 'cases' list"),
        ("cases: []\n", "'cases' must be a non-empty list"),
        ("", "must be a mapping with a 'cases' list"),
        (f"cases:\n{CASE_A}extra: 1\n", "unknown top-level key(s) 'extra'"),
        (f"defaults:\n  query: shared\ncases:\n{CASE_A}", "defaults: unknown key 'query'"),
        (f"defaults:\n  k: -1\ncases:\n{CASE_A}", "defaults: 'k' must be a positive integer"),
        ("cases:\n  - just a string\n", "g.yaml:2: case (#1): must be a mapping of case fields"),
    ],
)
def test_malformed_files(tmp_path: Path, text: str, expected: str) -> None:
    assert expected in _error(tmp_path, text)


def test_invalid_yaml_names_the_line(tmp_path: Path) -> None:
    message = _error(tmp_path, f"cases:\n{CASE_A}  - id: b\n    query: [unclosed\n")
    assert "g.yaml:" in message and "invalid YAML" in message


def test_invalid_json_names_the_line(tmp_path: Path) -> None:
    message = _error(tmp_path, '{"cases": [\n  {"id": "a",}\n]}', name="g.json")
    assert "g.json:2: invalid JSON" in message


def test_json_wrong_type_names_case_and_line(tmp_path: Path) -> None:
    text = '{"cases": [\n  {"id": "a", "query": "q"},\n  {"id": "b",\n   "query": "q", "k": "ten"}\n]}'
    assert "g.json:4: case 'b' (#2): 'k' must be a positive integer" in _error(tmp_path, text, "g.json")


def test_missing_and_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(GoldenError, match="not found"):
        load_golden(tmp_path / "absent.yaml")
    with pytest.raises(GoldenError, match="is a directory"):
        load_golden(tmp_path)
    (tmp_path / "latin1.yaml").write_bytes("cases: [{id: a, query: caf\xe9}]".encode("latin-1"))
    with pytest.raises(GoldenError, match="not UTF-8"):
        load_golden(tmp_path / "latin1.yaml")


SPLIT_YAML = """\
cases:
  - id: a
    query: q1
    split: dev
    tags: [single]
    must_include_source_paths: [x.md]
    expected_facts: [Ctrl+P, command palette]
  - id: b
    query: q2
    split: test
    tags: [unanswerable, near_miss]
    expect_abstain: true
  - id: c
    query: q3
    split: test
    must_include_source_paths: [y.md]
"""


def test_split_facts_and_tags_parse(tmp_path: Path) -> None:
    golden = load_golden(write(tmp_path / "g.yaml", SPLIT_YAML))
    a, b, c = golden.cases
    assert (a.split, a.tags, a.expected_facts) == ("dev", ("single",), ("Ctrl+P", "command palette"))
    assert (b.split, b.tags, b.expected_facts) == ("test", ("unanswerable", "near_miss"), ())
    assert golden.has_splits and c.tags == ()


def test_select_split_keeps_the_order_and_all_keeps_everything(tmp_path: Path) -> None:
    golden = load_golden(write(tmp_path / "g.yaml", SPLIT_YAML))
    assert [c.id for c in select_split(golden, "test").cases] == ["b", "c"]
    assert [c.id for c in select_split(golden, "dev").cases] == ["a"]
    assert select_split(golden, "all") is golden


def test_select_split_refuses_what_it_cannot_select(tmp_path: Path) -> None:
    unsplit = load_golden(write(tmp_path / "u.yaml", f"cases:\n{CASE_A}"))
    with pytest.raises(GoldenError, match="--split dev: the cases carry no 'split' key"):
        select_split(unsplit, "dev")
    only_dev = load_golden(write(tmp_path / "d.yaml", f"cases:\n{CASE_A}    split: dev\n"))
    with pytest.raises(GoldenError, match="--split test: no case has split 'test'"):
        select_split(only_dev, "test")
    with pytest.raises(InputError, match="--split must be one of dev, test, all, got 'train'"):
        select_split(only_dev, "train")


def test_a_case_without_split_among_split_cases_is_rejected(tmp_path: Path) -> None:
    text = SPLIT_YAML.replace("    split: test\n    must_include_source_paths: [y.md]\n",
                              "    must_include_source_paths: [y.md]\n")
    assert "g.yaml:13: case 'c' (#3): missing 'split'" in _error(tmp_path, text)


def test_expected_facts_on_an_unanswerable_case_are_contradictory(tmp_path: Path) -> None:
    text = "cases:\n  - id: a\n    query: q\n    expect_abstain: true\n    expected_facts: [x]\n"
    assert "expect_abstain is true, so it must not list expected_facts" in _error(tmp_path, text)
