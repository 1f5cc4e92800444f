"""What bench/peers.py and bench/peers_beir.py share on ragpg's side: the CLI, a throwaway data dir,
a runtime without an LLM, the embedder ragpg's settings name, and the printed tables."""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

CACHE_DIR = Path(tempfile.gettempdir()) / "ragpg-bench-cache"


def say(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def ragpg(*args: str) -> None:
    """The installed CLI, as a user runs it (its output to our stderr)."""
    import subprocess

    subprocess.run([str(Path(sys.executable).parent / "ragpg"), *args], check=True, stdout=sys.stderr)


@contextmanager
def ragpg_data_dir(data_dir: Path | None, load: Sequence[Sequence[str]]) -> Iterator[None]:
    """`--data-dir` as it is, or a throwaway embedded server under /tmp loaded with `load` (CLI
    argument lists), stopped and removed afterwards."""
    if data_dir is not None:
        os.environ["RAGPG_DATA_DIR"] = str(data_dir)
        yield
        return
    import shutil

    tmp = tempfile.mkdtemp(prefix="ragpg-peers-")
    os.environ.update(RAGPG_DATA_DIR=tmp, RAGPG_CONFIG=str(Path(tmp) / "none.toml"))
    os.environ.pop("DATABASE_URL", None)
    try:
        ragpg("db", "start")
        for args in load:
            started = time.perf_counter()
            ragpg(*args)
            say(f"ragpg {' '.join(args)}: {time.perf_counter() - started:.0f} s")
        yield
    finally:
        try:
            ragpg("db", "stop")
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


def ragpg_runtime(**overrides: Any) -> Any:
    """A runtime from the environment's settings, never with an LLM (the peers have none)."""
    from rag.config import LLMSettings, load_settings
    from rag.runtime import Runtime

    return Runtime.from_settings(load_settings(llm=LLMSettings(model=None), **overrides), pool_max_size=2)


def local_embedder() -> Any:
    """The embedder ragpg's settings name (the local MiniLM by default), as ragpg builds it."""
    from rag.config import load_settings
    from rag.embed.registry import get_embedder

    settings = load_settings()
    return get_embedder(settings.embedding.model, settings.embedding)


def model_slug(embedder: Any) -> str:
    return str(embedder.model_key).replace("/", "-").replace(":", "-")


def table_lines(rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join([r[0].ljust(widths[0]), *(c.rjust(w) for c, w in zip(r[1:], widths[1:], strict=True))])
            for r in rows]
