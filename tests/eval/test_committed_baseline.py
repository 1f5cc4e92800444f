"""The committed baseline for the Obsidian help golden set holds (the same path `.ci/run` checks).

The vault (../shared/data/obsidian-help) is indexed into the test database with the hash embedder
(fast and deterministic), and `ragpg eval` runs with the defaults (profile notes, mode ask)
on the test split against eval/baselines/obsidian-help.hash.json: exit 3 here means retrieval got worse.
Re-measure after an intended change with `--save-baseline` (see eval/README.md).
"""

from __future__ import annotations

import json
from pathlib import Path

from rag.eval import load_baseline, load_golden
from tests.eval.conftest import Run

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "eval" / "golden" / "obsidian-help.yaml"
BASELINE = REPO / "eval" / "baselines" / "obsidian-help.hash.json"


def test_committed_hash_baseline_is_met(cli: Run, shared_data: Path) -> None:
    baseline = load_baseline(BASELINE)
    assert (baseline.profile, baseline.mode, baseline.k) == ("notes", "ask", 10)
    assert cli("vault", "add", "help", shared_data / "obsidian-help")[0] == 0
    code, _, err = cli("index", "--quiet")
    assert code == 0, err
    code, out, err = cli("eval", GOLDEN, "--split", "test", "--baseline", BASELINE, "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["status"] == "ok" and data["baseline"]["degradations"] == []
    tested = [c for c in load_golden(GOLDEN).cases if c.split == "test"]
    assert data["summary"]["cases"] == len(tested) >= 75
