"""Run the real `ragpg` CLI in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def ragpg(*args: str, env: dict[str, str] | None = None, timeout: float = 120,
          cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("RAGPG_") and k != "DATABASE_URL"}
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "ragpg_cli.main", *args], capture_output=True, text=True,
                          env=full_env, timeout=timeout, cwd=cwd or REPO, stdin=subprocess.DEVNULL)
