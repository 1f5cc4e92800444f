"""Golden files: the cases an evaluation scores retrieval and answers against.

A golden file (YAML, or JSON by its `.json` suffix) is a mapping::

    description: free text (optional)
    defaults:                    # optional; used by every case that does not set the key
      vault: help                # a name or a list of names
      folder: Plugins            # a folder or a list of folders
      filters: {doc_type: kb}    # a metadata filter, passed to the search as is
      k: 10                      # retrieval depth asked of the search for the case
    cases:
      - id: phone-and-laptop     # unique
        query: can my notes stay the same on my phone and laptop?
        split: dev               # dev (tune on it) or test (report on it); all cases or none
        tags: [single]           # free labels, e.g. single, multi_hop, folder_scoped, near_miss
        must_include_source_paths: [Obsidian Sync/Introduction to Obsidian Sync.md]
        acceptable_source_paths: [Getting started/Sync your notes across devices.md]
        must_include_chunk_refs: ["Obsidian Sync/Set up Obsidian Sync.md#3"]
        expected_facts: [remote vault, end-to-end encryption]
        forbidden_claims: [Sync is free]
        expect_abstain: false    # true: the vault cannot answer; no sources or facts may be listed

Source paths are relative to the vault root, exactly as the files are named.
`expected_facts` are alternatives: short phrases (1-6 words) of which a correct answer states
at least one, matched as whole words after the normalisation forbidden claims get
(`rag.eval.metrics`). A file's cases either all carry a `split` or none does, so no case can
silently fall out of both halves. Validation is strict (unknown keys, wrong types, a missing
query, duplicated ids) and every error names the file, the line and the case, because a
silently skipped case makes a metric lie.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Any

from rag.errors import InputError
from rag.eval.errors import GoldenError
from rag.eval.golden_source import CASES_KEY, GoldenSource, read_golden_source
from rag.eval.text import normalise

TOP_LEVEL_KEYS = frozenset({CASES_KEY, "defaults", "description"})
DEFAULTABLE_KEYS = frozenset({"vault", "folder", "filters", "k"})
CHUNK_REF_SEPARATOR = "#"
DEV, TEST = "dev", "test"
SPLITS = (DEV, TEST)
ALL_SPLITS = "all"  # the selection meaning "every case", whatever its split
MAX_FACT_WORDS = 6


@dataclass(frozen=True)
class ChunkRef:
    """A chunk addressed as `source_path#ordinal`, the ordinal as the chunker numbers it."""

    source_path: str
    ordinal: int

    def __str__(self) -> str:
        return f"{self.source_path}{CHUNK_REF_SEPARATOR}{self.ordinal}"


@dataclass(frozen=True)
class GoldenCase:
    id: str
    query: str
    index: int  # 1-based position in the file, for messages
    line: int | None = None
    must_include_source_paths: tuple[str, ...] = ()
    acceptable_source_paths: tuple[str, ...] = ()
    must_include_chunk_refs: tuple[ChunkRef, ...] = ()
    forbidden_claims: tuple[str, ...] = ()
    vaults: tuple[str, ...] = ()
    folders: tuple[str, ...] = ()
    filters: Mapping[str, Any] = field(default_factory=dict)
    expect_abstain: bool = False
    k: int | None = None
    split: str | None = None  # DEV or TEST; None when the file has no splits
    expected_facts: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        return f"case '{self.id}' (#{self.index})"


@dataclass(frozen=True)
class GoldenSet:
    path: Path
    cases: tuple[GoldenCase, ...]
    description: str | None = None

    def where(self, case: GoldenCase) -> str:
        """`file:line: case 'id' (#n)` — the prefix of every message about a case."""
        return _where(self.path, case.line, case.label)

    @property
    def has_splits(self) -> bool:
        # Loading guarantees all-or-none, so the first case speaks for the file.
        return self.cases[0].split is not None


def validate_split(value: str) -> str:
    """A `--split` selection: dev, test or all."""
    if value not in (*SPLITS, ALL_SPLITS):
        raise InputError(f"--split must be one of {', '.join((*SPLITS, ALL_SPLITS))}, got {value!r}")
    return value


def select_split(golden: GoldenSet, split: str) -> GoldenSet:
    """The golden set restricted to one split (`all`: unchanged); asking a file without splits
    for one is an input error rather than an empty, meaningless run."""
    if validate_split(split) == ALL_SPLITS:
        return golden
    if not golden.has_splits:
        raise GoldenError(f"{golden.path}: --split {split}: the cases carry no 'split' key")
    chosen = tuple(case for case in golden.cases if case.split == split)
    if not chosen:
        raise GoldenError(f"{golden.path}: --split {split}: no case has split '{split}'")
    return replace(golden, cases=chosen)


class _Invalid(ValueError):
    """A field value is wrong; the caller adds file, line and case."""


def load_golden(path: str | Path) -> GoldenSet:
    source = read_golden_source(Path(path))
    data = source.data
    if not isinstance(data, Mapping):
        raise GoldenError(f"{source.path}: a golden file must be a mapping with a '{CASES_KEY}' list")
    unknown = sorted(str(k) for k in data if k not in TOP_LEVEL_KEYS)
    if unknown:
        raise GoldenError(f"{source.path}: unknown top-level key(s) {', '.join(map(repr, unknown))}")
    defaults = _parse_defaults(data.get("defaults"), source.path)
    raw_cases = data.get(CASES_KEY)
    if not isinstance(raw_cases, list) or not raw_cases:
        raise GoldenError(f"{source.path}: '{CASES_KEY}' must be a non-empty list of cases")
    cases = tuple(_parse_case(raw, i, source, defaults) for i, raw in enumerate(raw_cases))
    _reject_duplicate_ids(cases, source.path)
    _reject_partial_splits(cases, source.path)
    return GoldenSet(path=source.path, cases=cases, description=_description(data, source.path))


def _description(data: Mapping[str, Any], path: Path) -> str | None:
    value = data.get("description")
    if value is not None and not isinstance(value, str):
        raise GoldenError(f"{path}: 'description' must be a string")
    return value


# --- field parsers: raw value -> typed value, or _Invalid naming the problem -----------------


def _text(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _Invalid("must be a non-empty string")
    return value.strip()


def _texts(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise _Invalid("must be a list of strings")
    try:
        return tuple(_text(item) for item in value)
    except _Invalid:
        raise _Invalid("must be a list of non-empty strings") from None


def _names(value: Any) -> tuple[str, ...]:
    # A single name is the common case; a list serves multi-vault / multi-folder scopes.
    return (_text(value),) if isinstance(value, str) else _texts(value)


def _relative_path(value: str) -> str:
    if value.startswith(("/", "\\")) or (len(value) > 1 and value[1] == ":"):
        raise _Invalid(f"has '{value}', which must be relative to the vault root")
    parts = PurePosixPath(value).parts
    if ".." in parts:
        raise _Invalid(f"has '{value}', which must not contain '..'")
    return str(PurePosixPath(*parts))


def _paths(value: Any) -> tuple[str, ...]:
    return tuple(_relative_path(item) for item in _texts(value))


def _chunk_refs(value: Any) -> tuple[ChunkRef, ...]:
    refs = []
    for item in _texts(value):
        path, sep, ordinal = item.rpartition(CHUNK_REF_SEPARATOR)
        if not sep or not path or not ordinal.isdigit():
            raise _Invalid(f"has '{item}', which must look like 'folder/note.md#3' (path, '#', ordinal)")
        refs.append(ChunkRef(source_path=_relative_path(path), ordinal=int(ordinal)))
    return tuple(refs)


def _mapping(value: Any) -> Mapping[str, Any]:
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        raise _Invalid("must be a mapping with string keys")
    return dict(value)


def _flag(value: Any) -> bool:
    if not isinstance(value, bool):
        raise _Invalid("must be true or false")
    return value


def _split(value: Any) -> str:
    if value not in SPLITS:
        raise _Invalid(f"must be one of {', '.join(SPLITS)}")
    return str(value)


def _facts(value: Any) -> tuple[str, ...]:
    facts = _texts(value)
    for fact in facts:
        words = len(normalise(fact).split())
        # A long "fact" is a sentence a correct answer would rarely quote word for word.
        if not 1 <= words <= MAX_FACT_WORDS:
            raise _Invalid(f"has '{fact}', which must be a phrase of 1-{MAX_FACT_WORDS} words")
    return facts


def _positive_int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise _Invalid("must be a positive integer")
    return value


# file key -> (GoldenCase attribute, parser)
_FIELDS: Mapping[str, tuple[str, Callable[[Any], Any]]] = {
    "id": ("id", _text),
    "query": ("query", _text),
    "must_include_source_paths": ("must_include_source_paths", _paths),
    "acceptable_source_paths": ("acceptable_source_paths", _paths),
    "must_include_chunk_refs": ("must_include_chunk_refs", _chunk_refs),
    "forbidden_claims": ("forbidden_claims", _texts),
    "vault": ("vaults", _names),
    "folder": ("folders", _names),
    "filters": ("filters", _mapping),
    "expect_abstain": ("expect_abstain", _flag),
    "k": ("k", _positive_int),
    "split": ("split", _split),
    "expected_facts": ("expected_facts", _facts),
    "tags": ("tags", _texts),
}


# --- cases ----------------------------------------------------------------------------------


def _where(path: Path, line: int | None, subject: str) -> str:
    return f"{path}:{line}: {subject}" if line is not None else f"{path}: {subject}"


def _parse_defaults(raw: Any, path: Path) -> dict[str, Any]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise GoldenError(f"{path}: 'defaults' must be a mapping")
    parsed: dict[str, Any] = {}
    for key, value in raw.items():
        if key not in DEFAULTABLE_KEYS:
            allowed = ", ".join(sorted(DEFAULTABLE_KEYS))
            raise GoldenError(f"{path}: defaults: unknown key '{key}' (allowed: {allowed})")
        attr, parse = _FIELDS[key]
        try:
            parsed[attr] = parse(value)
        except _Invalid as exc:
            raise GoldenError(f"{path}: defaults: '{key}' {exc}") from None
    return parsed


def _case_subject(raw: Any, index: int) -> str:
    case_id = raw.get("id") if isinstance(raw, Mapping) else None
    named = f"'{case_id.strip()}' " if isinstance(case_id, str) and case_id.strip() else ""
    return f"case {named}(#{index + 1})"


def _parse_case(raw: Any, index: int, source: GoldenSource, defaults: Mapping[str, Any]) -> GoldenCase:
    lines = source.lines_of(index)
    subject = _case_subject(raw, index)

    def fail(problem: str, key: str | None = None) -> GoldenError:
        line = lines.keys.get(key, lines.line) if key else lines.line
        return GoldenError(f"{_where(source.path, line, subject)}: {problem}")

    if not isinstance(raw, Mapping):
        raise fail("must be a mapping of case fields")
    for key in raw:
        if key not in _FIELDS:
            raise fail(f"unknown key '{key}' (allowed: {', '.join(_FIELDS)})", str(key))
    for required in ("id", "query"):
        if required not in raw:
            raise fail(f"missing required key '{required}'")
    values = dict(defaults)
    for key, value in raw.items():
        attr, parse = _FIELDS[key]
        try:
            values[attr] = parse(value)
        except _Invalid as exc:
            raise fail(f"'{key}' {exc}", key) from None
    case = GoldenCase(index=index + 1, line=lines.line, **values)
    problem = _inconsistency(case)
    if problem:
        raise fail(problem)
    return case


def _inconsistency(case: GoldenCase) -> str | None:
    listed = case.must_include_source_paths + case.acceptable_source_paths + case.must_include_chunk_refs
    if case.expect_abstain and listed:
        return "expect_abstain is true, so it must not list expected sources or chunk refs"
    if case.expect_abstain and case.expected_facts:
        return "expect_abstain is true, so it must not list expected_facts"
    both = set(case.must_include_source_paths) & set(case.acceptable_source_paths)
    if both:
        return f"'{sorted(both)[0]}' is listed as both must_include and acceptable"
    return None


def _reject_duplicate_ids(cases: tuple[GoldenCase, ...], path: Path) -> None:
    first: dict[str, GoldenCase] = {}
    for case in cases:
        earlier = first.setdefault(case.id, case)
        if earlier is not case:
            at = f" (line {earlier.line})" if earlier.line is not None else ""
            raise GoldenError(
                f"{_where(path, case.line, case.label)}: duplicate id, first used by case #{earlier.index}{at}"
            )


def _reject_partial_splits(cases: tuple[GoldenCase, ...], path: Path) -> None:
    # A case without a split would be in neither half: its absence would flatter both.
    with_split = [case for case in cases if case.split is not None]
    if with_split and len(with_split) < len(cases):
        case = next(case for case in cases if case.split is None)
        raise GoldenError(f"{_where(path, case.line, case.label)}: missing 'split' "
                          f"(other cases have one; every case needs one of {', '.join(SPLITS)})")


__all__ = ["ALL_SPLITS", "SPLITS", "ChunkRef", "GoldenCase", "GoldenSet", "load_golden", "select_split",
           "validate_split"]
