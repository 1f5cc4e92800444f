"""Optional features are extras: the library runs without them, and a command that needs one says
which to install in one line (rag/extras.py). Each check runs in a fresh interpreter in which the
extras' modules cannot be imported, as on an install without them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from rag.extras import EXTRA_MODULES

BLOCKED = sorted({m for modules in EXTRA_MODULES.values() for m in modules})
# A module set to None in sys.modules raises ImportError on import: the extra is "not installed".
BLOCK = f"import sys\nfor m in {BLOCKED!r}: sys.modules[m] = None\n"


def _python(code: str, tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "RAGPG_DATA_DIR": str(tmp_path / "data"), "RAGPG_CONFIG": str(tmp_path / "none.toml"),
               **env}
    environ.pop("DATABASE_URL", None)
    return subprocess.run([sys.executable, "-c", BLOCK + code], capture_output=True, text=True, env=environ,
                          timeout=120)


def test_the_library_imports_without_any_extra(tmp_path: Path) -> None:
    code = ("from rag import compute_context, ask, search, index, Runtime\n"
            "import rag.compute, rag.notes.ask, rag.ingest.pipeline, rag.runtime, rag.trace, rag.retrieval.run\n"
            "print('ok')")
    done = _python(code, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_tracing_without_the_langfuse_extra_is_off_with_one_warning(tmp_path: Path) -> None:
    code = ("import logging; logging.basicConfig(level=logging.WARNING)\n"
            "from rag.config import load_settings\nfrom rag.trace import Tracer\n"
            "print(Tracer.from_settings(load_settings()).enabled)")
    done = _python(code, tmp_path, LANGFUSE_PUBLIC_KEY="pk-lf-x", LANGFUSE_SECRET_KEY="sk-lf-x")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"
    assert "pip install 'ragpg[langfuse]'" in done.stderr


def _cli(args: list[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return _python(f"sys.argv = ['ragpg', *{args!r}]\nfrom ragpg_cli.main import run\nrun()", tmp_path)


def test_serve_without_the_server_extra_says_what_to_install(tmp_path: Path) -> None:
    done = _cli(["serve"], tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "error: ragpg serve needs the 'server' extra: pip install 'ragpg[server]' "
        "(missing: fastapi, uvicorn, fastapi_offline)"]


def test_eval_without_the_eval_extra_says_what_to_install(tmp_path: Path) -> None:
    golden = tmp_path / "golden.yaml"
    golden.write_text("cases: []\n")
    for args, feature in (([str(golden)], "ragpg eval"), ([str(tmp_path)], "ragpg eval-beir")):
        done = _cli([feature.split()[1], *args], tmp_path)
        assert done.returncode == 2, done.stderr
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and f"{feature} needs the 'eval' extra: pip install 'ragpg[eval]'" in lines[0]


def test_mcp_without_the_mcp_extra_says_what_to_install(tmp_path: Path) -> None:
    done = _cli(["mcp"], tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "error: ragpg mcp needs the 'mcp' extra: pip install 'ragpg[mcp]' (missing: mcp)"]
    assert done.stdout == ""
