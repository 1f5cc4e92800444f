"""Frontmatter and document metadata: YAML between `---` fences, plus title fallbacks.

Line endings are normalised first (CRLF and a lone CR become LF), so front matter written on any
platform parses, and line numbers count the lines an editor shows. Positions (`body_start_byte`,
and the chunks' positions after it) are in the normalised text.

A broken frontmatter block never loses the document: it is reported in `warnings` and the body
is still indexed. Invalid YAML between the fences: the body starts after the closing fence. YAML
that is not a mapping (e.g. a `---` rule, a line of prose, `---`): the whole file is body. No
closing fence: the whole file is body.

Fail closed: whenever the frontmatter cannot be trusted to say what the note asked for (it does not
parse, or `confidentiality` is present but not one known level given once), the note is stored at
the most restricted level and `failed_closed` is set, so the run summary can count it. So is a note
whose text may have asked for a level the parse did not read (rag.ingest.lookalikes: a fence that is
not on line 1, a `confidentiality:` line outside or below the front matter, a key that reads as
`confidentiality` without being it). Its whole text is indexed, at the most restricted level, with a
warning naming the file.
"""

from __future__ import annotations

import base64
import datetime as dt
import math
import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any, cast

import yaml

from rag.access import CONFIDENTIALITY_LEVELS
from rag.ingest.lookalikes import (
    LEVEL_KEY,
    level_key_lookalike,
    level_key_synonym,
    level_set_below,
    lookalike_frontmatter,
)

# libyaml's safe loader when PyYAML was built with it: the same documents, ~5x faster than the
# pure-Python one (frontmatter was a fifth of parsing time on the help vault). Its error messages
# are worded differently, so a document it rejects is loaded again by the pure-Python loader, whose
# message is the one reported.
_TIMESTAMP_TAG = "tag:yaml.org,2002:timestamp"
_CONFIDENTIALITY_KEY = LEVEL_KEY


_SafeLoaderClass = type[yaml.SafeLoader] | type[yaml.CSafeLoader]


def _strict_loader(base: _SafeLoaderClass) -> _SafeLoaderClass:
    """`base` with two changes. Timestamps stay strings: PyYAML raises a bare ValueError on an
    impossible date (2026-02-30), which would reject the whole note; `_date` warns instead. A
    mapping naming `confidentiality` twice (in any case, or via a merge key) is an error: which one
    wins would otherwise be an accident of YAML, and the note fails closed."""

    class Loader(base):  # type: ignore[valid-type, misc]  # mypy cannot check a base class chosen at run time
        def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
            self.flatten_mapping(node)
            names = [k.value.lower() for k, _ in node.value if isinstance(k, yaml.ScalarNode)]
            if names.count(_CONFIDENTIALITY_KEY) > 1:
                raise yaml.constructor.ConstructorError(
                    None, None, "'confidentiality' given more than once", node.start_mark)
            mapping: dict[Any, Any] = super().construct_mapping(node, deep=deep)
            return mapping

    Loader.yaml_implicit_resolvers = {
        first: [r for r in resolvers if r[0] != _TIMESTAMP_TAG]
        for first, resolvers in base.yaml_implicit_resolvers.items()
    }
    Loader.add_constructor("tag:yaml.org,2002:map", Loader.construct_yaml_map)
    return Loader


_FAST_SAFE_LOADER = _strict_loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader))
_SAFE_LOADER = _strict_loader(yaml.SafeLoader)

DEFAULT_CONFIDENTIALITY = "public"
# Fail closed: a level nobody recognises is treated as the most restrictive one.
UNKNOWN_CONFIDENTIALITY = CONFIDENTIALITY_LEVELS[-1]

_OPEN_FENCE = "---"
_CLOSE_FENCES = ("---", "...")
# YAML anchors let a few hundred bytes describe billions of nodes ("billion laughs");
# converting them to JSON would expand every alias, so the conversion has a node budget.
_MAX_FRONTMATTER_NODES = 100_000

_H1 = re.compile(r"^ {0,3}#[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_DATE = re.compile(r"^(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})(?:$|[T ])")
_TAG_SPLIT = re.compile(r"[,\s]+")
# The note's date, first present wins: an explicit `date`, else when it was last `updated`, else `created`
# (freshness should reflect the latest change the note states). Without any: the file's mtime.
DATE_KEYS = ("date", "updated", "created")


@dataclass(frozen=True)
class ParsedDocument:
    title: str
    date: str | None
    project: str | None
    tags: list[str]
    confidentiality: str
    doc_type: str | None
    persona: str | None
    url: str | None
    aliases: list[str]
    frontmatter: dict[str, Any]
    failed_closed: bool  # stored at the most restricted level because the text could not be trusted
    body_start_line: int  # 0-based index of the first body line ("\n"-separated lines)
    body_start_byte: int  # offset of that line in the UTF-8 encoding of the text
    warnings: list[str] = field(default_factory=list)

    def body(self, text: str) -> str:
        """The part of `text` (line endings normalised) after the frontmatter: what the chunker takes."""
        return normalise_line_endings(text).encode("utf-8")[self.body_start_byte :].decode("utf-8")


class _FrontmatterError(Exception):
    """A short reason why the frontmatter block could not be used."""


class _NotAMapping(_FrontmatterError):
    pass


def normalise_line_endings(text: str) -> str:
    """CRLF and lone CR as LF: the one line ending parsing, chunking and line numbers assume."""
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text


def parse_document(text: str, source_path: str) -> ParsedDocument:
    warnings: list[str] = []
    text = normalise_line_endings(text)
    lines = text.split("\n")
    raw, body_line, problem = _split_frontmatter(lines)
    lookalike = raw is None and problem is None and (problem := lookalike_frontmatter(lines)) is not None
    frontmatter: dict[str, Any] = {}
    if problem is None and raw is not None:
        try:
            frontmatter = _load_mapping(raw)
        except _NotAMapping as exc:
            # Likely a thematic break and ordinary text rather than metadata: index all of it.
            problem, body_line = str(exc), 0
        except _FrontmatterError as exc:
            problem = str(exc)

    fm = {str(k).lower(): v for k, v in frontmatter.items()}
    date, date_problem = _date(fm)
    if date_problem:
        warnings.append(f"unparseable date in {source_path}: {date_problem} (indexed without a date)")
    conf_problem: str | None
    if problem is not None:
        confidentiality, conf_problem = UNKNOWN_CONFIDENTIALITY, problem
        what = "unrecognised" if lookalike else "broken"
        warnings.append(f"{what} frontmatter in {source_path}: {problem} (treated as {confidentiality})")
    else:
        confidentiality, conf_problem = _confidentiality(fm)
        mentions = len(_MENTIONS_CONFIDENTIALITY.findall("\n".join(lines[:body_line])))
        if mentions > (1 if _CONFIDENTIALITY_KEY in fm else 0):
            # The text asks for a level the parse did not yield as a top-level key (e.g. inside a
            # quoted or nested key), with or without a top-level one beside it: trust neither
            # reading, store it at the most restricted level.
            confidentiality = UNKNOWN_CONFIDENTIALITY
            conf_problem = "a confidentiality line that is not a top-level key"
        doubt = level_key_lookalike(frontmatter) or level_key_synonym(frontmatter) or level_set_below(lines[body_line:])
        if doubt:
            confidentiality, conf_problem = UNKNOWN_CONFIDENTIALITY, doubt
        if conf_problem:
            warnings.append(f"unknown confidentiality in {source_path}: {conf_problem} (treated as {confidentiality})")
    return ParsedDocument(
        title=_scalar(fm.get("title")) or _first_h1(lines[body_line:]) or PurePosixPath(source_path).stem,
        date=date,
        project=_scalar(fm.get("project")),
        tags=_tags(fm.get("tags", fm.get("tag"))),
        confidentiality=confidentiality,
        doc_type=_scalar(fm.get("doc_type", fm.get("type"))),
        persona=_scalar(fm.get("persona")),
        url=_scalar(fm.get("url")),
        aliases=_aliases(fm.get("aliases", fm.get("alias"))),
        frontmatter=frontmatter,
        failed_closed=conf_problem is not None,
        body_start_line=body_line,
        body_start_byte=_byte_offset(text, lines, body_line),
        warnings=warnings,
    )


def _byte_offset(text: str, lines: list[str], line_index: int) -> int:
    # min(): a closing fence on the last line without "\n" leaves an empty body at end of file.
    offset = sum(len(line.encode("utf-8")) + 1 for line in lines[:line_index])
    return min(offset, len(text.encode("utf-8")))


def _split_frontmatter(lines: list[str]) -> tuple[str | None, int, str | None]:
    """(yaml text or None, body start line, problem or None)."""
    if not lines or lines[0].lstrip("\ufeff").rstrip() != _OPEN_FENCE:
        return None, 0, None
    for i in range(1, len(lines)):
        if lines[i].rstrip() in _CLOSE_FENCES:
            return "\n".join(lines[1:i]), i + 1, None
    # Without a closing fence there is no telling where metadata ends; keep everything as body.
    return None, 0, "no closing '---' fence"


def _safe_load(raw: str) -> Any:
    try:
        return yaml.load(raw, Loader=_FAST_SAFE_LOADER)  # noqa: S506 (a safe loader)
    except yaml.YAMLError:
        return yaml.load(raw, Loader=_SAFE_LOADER)  # noqa: S506 (raises again, with the pure-Python wording)


def _load_mapping(raw: str) -> dict[str, Any]:
    try:
        data = _safe_load(raw)
    except yaml.MarkedYAMLError as exc:
        where = f" (line {exc.problem_mark.line + 2})" if exc.problem_mark else ""
        raise _FrontmatterError(f"{exc.problem or exc.context or 'invalid YAML'}{where}") from None
    except (yaml.YAMLError, RecursionError, ValueError, TypeError, OverflowError) as exc:
        # ValueError & co.: a constructor choking on a value (e.g. `!!int x`), not a YAML error.
        raise _FrontmatterError(f"invalid YAML: {type(exc).__name__}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise _NotAMapping(f"expected a mapping, got {type(data).__name__}")
    budget = [_MAX_FRONTMATTER_NODES]
    try:
        return cast(dict[str, Any], _jsonable(data, budget))  # a dict's copy is a dict
    except RecursionError:
        raise _FrontmatterError("nested too deeply") from None


def _jsonable(value: Any, budget: list[int]) -> Any:
    """A copy that json.dumps (and Postgres jsonb) accepts: dates as ISO strings, string keys."""
    budget[0] -= 1
    if budget[0] < 0:
        raise _FrontmatterError("too many values (YAML alias expansion?)")
    if isinstance(value, dict):
        return {str(k): _jsonable(v, budget) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_jsonable(v, budget) for v in value]
    if isinstance(value, dt.date | dt.time):  # datetime is a date subclass
        return value.isoformat()
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)  # jsonb has no NaN or Infinity
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


def _scalar(value: Any) -> str | None:
    if value is None or isinstance(value, dict | list):
        return None
    text = str(value).strip()
    return text or None


def _first_h1(body_lines: list[str]) -> str | None:
    fence: str | None = None
    for line in body_lines:
        opened = _FENCE.match(line)
        if fence is not None:
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
                fence = None
            continue
        if opened:
            fence = opened.group(1)
            continue
        if m := _H1.match(line.rstrip("\r")):
            return m.group(1).strip()
    return None


def _date(fm: dict[str, Any]) -> tuple[str | None, str | None]:
    for key in DATE_KEYS:
        value = fm.get(key)
        if value is None or value == "":
            continue
        if isinstance(value, dt.datetime):
            return value.date().isoformat(), None
        if isinstance(value, dt.date):
            return value.isoformat(), None
        if isinstance(value, str) and (m := _DATE.match(value.strip())):
            try:
                return dt.date(int(m[1]), int(m[2]), int(m[3])).isoformat(), None
            except ValueError:
                pass
        return None, f"{key}: {str(value)[:40]!r}"
    return None, None


_MENTIONS_CONFIDENTIALITY = re.compile(r"confidentiality\s*['\"]?\s*:", re.IGNORECASE)


def _confidentiality(fm: dict[str, Any]) -> tuple[str, str | None]:
    """The level a parsed frontmatter asks for; (most restricted, why) unless it is a known level.

    Only an absent key means public: an empty value, a list (`[restricted]`), a number or an
    unknown word may each have meant something stricter than public."""
    if _CONFIDENTIALITY_KEY not in fm:
        return DEFAULT_CONFIDENTIALITY, None
    value = fm[_CONFIDENTIALITY_KEY]
    if isinstance(value, str) and value.strip().lower() in CONFIDENTIALITY_LEVELS:
        return value.strip().lower(), None
    if isinstance(value, str):
        return UNKNOWN_CONFIDENTIALITY, repr(value.strip()[:40])
    return UNKNOWN_CONFIDENTIALITY, f"not a plain level: {type(value).__name__} {str(value)[:40]!r}"


def _tags(value: Any) -> list[str]:
    items = _TAG_SPLIT.split(value) if isinstance(value, str) else _flat_strings(value)
    return _dedupe(item.strip().lstrip("#").strip() for item in items)


def _aliases(value: Any) -> list[str]:
    # Aliases may contain spaces, so a string splits on commas only.
    items = value.split(",") if isinstance(value, str) else _flat_strings(value)
    return _dedupe(item.strip() for item in items)


def _flat_strings(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, list | tuple):
        return [str(v) for v in value if v is not None and not isinstance(v, dict | list)]
    if isinstance(value, dict):
        return []
    return [str(value)]


def _dedupe(items: Any) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    for item in items:
        if item and item not in seen:
            seen.add(item)
            out.append(item)
    return out


def confidentiality_rank(level: str) -> int:
    """Position in CONFIDENTIALITY_LEVELS (public = 0); unknown levels rank as the most restrictive."""
    return CONFIDENTIALITY_LEVELS.index(level) if level in CONFIDENTIALITY_LEVELS else len(CONFIDENTIALITY_LEVELS) - 1
