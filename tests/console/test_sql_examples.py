"""Every example in docs/sql-console.md runs verbatim in the real psql on a vault named `notes` made
from ../shared/data/obsidian-help by the page's own first steps (hash embedder, for speed), and
every query returns rows."""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import pytest

from rag.store.embedded import bin_dir
from tests.support.cli import REPO, ragpg

DOC = REPO / "docs" / "sql-console.md"
BLOCK = re.compile(r"```(\w+)\n(.*?)```", re.DOTALL)
ROWS = re.compile(r"^\((\d+) rows?\)$", re.MULTILINE)
MARK = "@@example"


def blocks(kind: str) -> list[str]:
    return [body for lang, body in BLOCK.findall(DOC.read_text(encoding="utf-8")) if lang == kind]


def statements(block: str) -> list[str]:
    """Statements of a block: each ends with ';' or a psql \\gset (comment lines travel with the next)."""
    out, current = [], []
    for line in block.splitlines():
        current.append(line)
        code = re.sub(r"--.*$", "", line).rstrip()
        if code.endswith(";") or code.endswith("\\gset"):
            out.append("\n".join(current))
            current = []
    assert not "".join(current).strip() or all(line.strip().startswith("--") or not line.strip() for line in current), (
        f"unterminated statement in docs/sql-console.md: {current}")
    return out


def test_statement_splitting() -> None:
    assert statements("-- c\nselect 1;\nselect 2  -- x\nfrom t; -- y\nselect a from b \\gset\n") == [
        "-- c\nselect 1;", "select 2  -- x\nfrom t; -- y", "select a from b \\gset"]


def psql() -> str:
    shipped = bin_dir() / "psql"
    return str(shipped) if shipped.exists() else "psql"


@pytest.fixture
def notes_vault(db_url: str, shared_data: Path, tmp_path: Path) -> dict[str, str]:
    """The page's first steps, run as written (except `ragpg db psql` itself: the test runs psql)."""
    env = {"DATABASE_URL": db_url, "RAGPG_EMBEDDING__MODEL": "hash", "RAGPG_CONFIG": str(tmp_path / "none.toml"),
           "RAGPG_DATA_DIR": str(tmp_path / "data")}
    steps = [line for line in blocks("bash")[0].splitlines() if line.strip()]
    assert steps[-1] == "ragpg db psql" and len(steps) >= 3
    for step in steps[:-1]:
        argv = shlex.split(step)
        assert argv[0] == "ragpg", step
        done = ragpg(*argv[1:], env=env, timeout=600, cwd=REPO)
        assert done.returncode == 0, f"{step}: {done.stderr}"
    return env


def test_every_example_runs_and_returns_rows(notes_vault: dict[str, str], db_url: str) -> None:
    examples = [s for block in blocks("sql") for s in statements(block)]
    assert len(examples) >= 15
    script = ["\\set ON_ERROR_STOP on", "\\pset footer on", "\\pset pager off"]
    for i, statement in enumerate(examples):
        script += [f"\\echo {MARK} {i}", statement]
    done = subprocess.run([psql(), "-X", "-q", "-d", db_url, "-f", "-"], input="\n".join(script) + "\n",
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr + done.stdout[-2000:]
    assert "ERROR" not in done.stderr, done.stderr
    outputs = re.split(rf"^{MARK} (\d+)$", done.stdout, flags=re.MULTILINE)[1:]
    results = dict(zip((int(n) for n in outputs[0::2]), outputs[1::2], strict=True))
    assert sorted(results) == list(range(len(examples)))
    for i, statement in enumerate(examples):
        if statement.rstrip().endswith("\\gset"):
            continue  # sets psql variables; \gset itself fails unless exactly one row came back
        counts = [int(n) for n in ROWS.findall(results[i])]
        assert counts and counts[0] > 0, f"no rows from docs/sql-console.md example:\n{statement}\n{results[i]}"
    # psql alone, text in, ranked rows out: the vector leg ran for the question `ragpg embed` cached
    hybrid = next(i for i, s in enumerate(examples) if "from search_hybrid('how do I sync" in s)
    assert "vector+lexical" in results[hybrid]
    lexical_only = next(i for i, s in enumerate(examples) if "from search_hybrid('export a note to PDF'" in s)
    assert "vector+lexical" not in results[lexical_only] and "lexical" in results[lexical_only]
