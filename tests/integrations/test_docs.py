"""The examples of docs/integrations.md run as written, each in a fresh interpreter on the indexed
`notes` vault (the environment points ragpg at the per-test database, as a backend's would), with a
stand-in `llm` that answers with the prompt it was given, so the output shows what the LLM read."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from rag.config import Settings
from rag.runtime import Runtime
from tests.integrations.conftest import NOTES, RESTRICTED_NOTE, SYNC_FOLDER
from tests.support.cli import REPO

DOC = REPO / "docs" / "integrations.md"
BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)
SOURCE_LINE = re.compile(r"^S\d+ (.+) (\d\.\d+)$")
MAX_EXAMPLE_LINES = 15  # the promise: each example under 15 lines

LANGCHAIN_LLM = ("from langchain_core.messages import AIMessage\nfrom langchain_core.runnables import RunnableLambda\n"
                 "llm = RunnableLambda(lambda prompt: AIMessage(content=prompt.to_string()))\n")
LLAMAINDEX_LLM = "from llama_index.core.llms import MockLLM\nllm = MockLLM()\n"


def examples() -> list[str]:
    return BLOCK.findall(DOC.read_text(encoding="utf-8"))


def run_example(code: str, settings: Settings, tmp_path: Path) -> str:
    env = {**os.environ, "DATABASE_URL": settings.database_url or "", "RAGPG_EMBEDDING__MODEL": "hash",
           "RAGPG_CONFIG": str(tmp_path / "none.toml"), "RAGPG_DATA_DIR": str(tmp_path / "data")}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_page_has_two_short_examples() -> None:
    blocks = examples()
    assert len(blocks) == 2
    assert all(len(b.strip().splitlines()) < MAX_EXAMPLE_LINES for b in blocks), [len(b.splitlines()) for b in blocks]


def test_the_langchain_chain_runs_on_ragpgs_passages(runtime: Runtime, settings: Settings, tmp_path: Path) -> None:
    out = run_example(LANGCHAIN_LLM + examples()[0], settings, tmp_path)
    assert "Question: how do I sync my notes between devices?" in out
    quoted = [path for path, text in NOTES.items() if text.split("\n\n", 1)[1].strip() in out]
    assert len(quoted) == 4 and all(p.startswith(SYNC_FOLDER + "/") for p in quoted)  # the filter held
    assert "[S1] " in out and RESTRICTED_NOTE not in out


def test_the_llamaindex_engine_runs_on_ragpgs_passages(runtime: Runtime, settings: Settings, tmp_path: Path) -> None:
    out = run_example(LLAMAINDEX_LLM + examples()[1], settings, tmp_path)
    lines = out.strip().splitlines()
    assert lines[-1] in ("base", "hyde", "rewrite", "multi", "reverse", "prf")  # the decision's route
    sources = [SOURCE_LINE.match(line) for line in lines[-5:-1]]  # marker, source path, score
    assert all(m is not None and m[1] in NOTES for m in sources), lines[-5:-1]
    assert "If notes do not sync between devices" in out  # a passage the MockLLM was given

