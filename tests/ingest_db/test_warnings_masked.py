"""Warnings and skip reasons name what the indexer could not read, in the note's own words: a secret
there is masked before it is printed or stored, like everywhere else (red-team finding)."""

from __future__ import annotations

import json
from pathlib import Path

import psycopg
import pytest

from rag.ingest.report import SkipRecord, VaultReport
from tests.support.files import write_files

TOKEN = "ghp_" + "a1B2c3D4e5" * 4  # a GitHub token's shape
NOTES = {
    "dated.md": f"---\ndate: {TOKEN}\n---\nA note with a date that is a token.\n",
    "levelled.md": f"---\nconfidentiality: {TOKEN}\n---\nA note whose level is a token.\n",
    "open.md": "An ordinary note.\n",
}


@pytest.mark.security
def test_no_secret_in_index_warnings_printed_or_stored(cli, tmp_path: Path, aconn: psycopg.Connection) -> None:
    assert cli("vault", "add", "notes", str(write_files(tmp_path / "notes", NOTES)))[0] == 0
    code, out, err = cli("index", "--json")
    assert code == 0, err
    assert "unparseable date in dated.md" in err and "unknown confidentiality in levelled.md" in err
    assert TOKEN not in err and TOKEN not in out and "[REDACTED:github_token]" in err
    report = json.loads(out)
    assert any("unparseable date" in w for v in report["vaults"] for w in v["warnings"])
    stored = aconn.execute("select coalesce(string_agg(progress::text, ' '), '') as p from index_runs").fetchone()["p"]
    assert TOKEN not in stored


@pytest.mark.security
def test_a_report_masks_what_it_shows() -> None:
    vault = VaultReport(vault="v", embedding_model="m", warnings=[f"odd value {TOKEN}"],
                        skipped=[SkipRecord("a.md", "parse_error", f"ValueError: {TOKEN}")], error=f"failed: {TOKEN}")
    shown = json.dumps(vault.to_dict())
    assert TOKEN not in shown and shown.count("[REDACTED:github_token]") == 3
    assert TOKEN not in vault.skipped[0].message
