"""Reads a golden file (YAML or JSON) into plain data plus the line of every case and case key.

Line numbers make validation errors actionable: a 40-case file is hard to fix from
"case 17 is invalid". YAML is composed into nodes (which carry `start_mark`) and then
constructed from those same nodes, so data and lines cannot disagree. JSON is parsed by the
json module (strict JSON, exact error positions); its lines come from composing the same
text as YAML, best effort, since JSON is practically a YAML subset.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from rag.eval.errors import GoldenError, reading

JSON_SUFFIXES = frozenset({".json"})
CASES_KEY = "cases"


@dataclass(frozen=True)
class CaseLines:
    """1-based line of a case and of each of its keys (empty when unknown)."""

    line: int | None = None
    keys: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class GoldenSource:
    path: Path
    data: Any
    case_lines: tuple[CaseLines, ...] = ()

    def lines_of(self, index: int) -> CaseLines:
        return self.case_lines[index] if index < len(self.case_lines) else CaseLines()


def read_golden_source(path: Path) -> GoldenSource:
    text = _read_text(path)
    if path.suffix.lower() in JSON_SUFFIXES:
        data = _parse_json(text, path)
        node = _compose_quietly(text)
    else:
        node, data = _parse_yaml(text, path)
    return GoldenSource(path=path, data=data, case_lines=_case_lines(node))


def _read_text(path: Path) -> str:
    with reading(path, "golden file ", GoldenError):
        return path.read_text(encoding="utf-8")


def _parse_json(text: str, path: Path) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise GoldenError(f"{path}:{exc.lineno}: invalid JSON: {exc.msg}") from None


def _parse_yaml(text: str, path: Path) -> tuple[yaml.Node | None, Any]:
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is not None:
            _reject_duplicate_keys(node, path)
        data = loader.construct_document(node) if node is not None else None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        problem = exc.problem or exc.context or "syntax error"
        raise GoldenError(f"{where}: invalid YAML: {problem}") from None
    except yaml.YAMLError as exc:
        raise GoldenError(f"{path}: invalid YAML: {' '.join(str(exc).split())}") from None
    finally:
        loader.dispose()
    return node, data


def _compose_quietly(text: str) -> yaml.Node | None:
    try:
        return yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return None  # lines are a convenience; the JSON data is already valid


def _reject_duplicate_keys(node: yaml.Node, path: Path) -> None:
    # PyYAML keeps the last of two equal keys silently; in a golden case that hides an edit.
    if isinstance(node, yaml.MappingNode):
        seen: set[Any] = set()
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
            if key is not None and key in seen:
                raise GoldenError(f"{path}:{key_node.start_mark.line + 1}: duplicate key '{key}'")
            seen.add(key)
            _reject_duplicate_keys(value_node, path)
    elif isinstance(node, yaml.SequenceNode):
        for item in node.value:
            _reject_duplicate_keys(item, path)


def _case_lines(root: yaml.Node | None) -> tuple[CaseLines, ...]:
    cases = _mapping_value(root, CASES_KEY)
    if not isinstance(cases, yaml.SequenceNode):
        return ()
    return tuple(_lines_of_case(item) for item in cases.value)


def _lines_of_case(node: yaml.Node) -> CaseLines:
    keys: dict[str, int] = {}
    if isinstance(node, yaml.MappingNode):
        for key_node, _ in node.value:
            if isinstance(key_node, yaml.ScalarNode):
                keys[str(key_node.value)] = key_node.start_mark.line + 1
    return CaseLines(line=node.start_mark.line + 1, keys=keys)


def _mapping_value(node: yaml.Node | None, key: str) -> yaml.Node | None:
    if not isinstance(node, yaml.MappingNode):
        return None
    pairs: list[tuple[yaml.Node, yaml.Node]] = node.value  # the stubs leave Node.value untyped
    for key_node, value_node in pairs:
        if isinstance(key_node, yaml.ScalarNode) and key_node.value == key:
            return value_node
    return None
