"""Assign every case of a golden file to the dev or the test split, once, by a fixed rule.

    python eval/split_golden.py eval/golden/obsidian-help.yaml           # write `split:` lines
    python eval/split_golden.py eval/golden/obsidian-help.yaml --check   # exit 1 if they differ

The rule, so anyone can re-derive the split and see that nobody moved a case after tuning:

* stratum of a case, from its tags: `near_miss`, else `unanswerable` (off-topic), else
  `multi_hop`, else `folder_scoped`, else `single`;
* within each stratum, the case ids sorted, then shuffled by a fresh `random.Random(SEED)`;
* the first half (rounded down) is dev, the rest test, so an odd stratum gives test the extra case.

Stratifying keeps each kind of question in both halves in equal measure, so a split cannot be
easy by accident (all near-misses in dev, say). Writing edits only the `split:` line after each
`- id:` line and keeps the rest of the file (comments, order) as it is.
"""

from __future__ import annotations

import argparse
import random
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from rag.errors import InputError
from rag.eval import load_golden
from rag.eval.golden import DEV, TEST

SEED = 20261124
STRATA = ("near_miss", "unanswerable", "multi_hop", "folder_scoped", "single")
_ID_LINE = re.compile(r"^(?P<indent>\s*)- id:\s*(?P<id>\S+)\s*$")
_SPLIT_LINE = re.compile(r"^\s+split:\s*\S+\s*$")


def stratum(tags: Iterable[str]) -> str:
    """The first stratum a case's tags name; untagged cases count as single-note questions."""
    present = set(tags)
    return next((name for name in STRATA if name in present), "single")


def assign_splits(cases: Sequence[tuple[str, str]]) -> dict[str, str]:
    """(case id, stratum) pairs -> case id -> dev or test, by the rule in the module docstring."""
    by_stratum: dict[str, list[str]] = {}
    for case_id, name in cases:
        by_stratum.setdefault(name, []).append(case_id)
    splits: dict[str, str] = {}
    for name in sorted(by_stratum):
        ids = sorted(by_stratum[name])
        # A fresh generator per stratum: adding a case of one kind cannot reshuffle the others.
        random.Random(SEED).shuffle(ids)
        half = len(ids) // 2
        splits |= dict.fromkeys(ids[:half], DEV) | dict.fromkeys(ids[half:], TEST)
    return splits


def write_splits(text: str, splits: Mapping[str, str]) -> str:
    """The file text with exactly one `split:` line right after each case's `- id:` line."""
    out: list[str] = []
    for line in text.splitlines(keepends=True):
        if _SPLIT_LINE.match(line):
            continue  # re-written below, after its case's id line
        out.append(line)
        match = _ID_LINE.match(line)
        if match and match["id"] in splits:
            out.append(f"{match['indent']}  split: {splits[match['id']]}\n")
    return "".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("golden", type=Path)
    parser.add_argument("--check", action="store_true", help="Only compare; exit 1 when a split differs.")
    args = parser.parse_args(argv)
    try:
        golden = load_golden(args.golden)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)  # already names the file, line and case
        return 2
    splits = assign_splits([(case.id, stratum(case.tags)) for case in golden.cases])
    if args.check:
        moved = sorted(case.id for case in golden.cases if case.split != splits[case.id])
        for case_id in moved:
            print(f"{args.golden}: case '{case_id}' should be in {splits[case_id]}", file=sys.stderr)
        return 1 if moved else 0
    text = args.golden.read_text(encoding="utf-8")
    args.golden.write_text(write_splits(text, splits), encoding="utf-8")
    for name in STRATA:
        kinds = [splits[c.id] for c in golden.cases if stratum(c.tags) == name]
        print(f"{name}: {kinds.count(DEV)} dev, {kinds.count(TEST)} test")
    return 0


if __name__ == "__main__":
    sys.exit(main())
