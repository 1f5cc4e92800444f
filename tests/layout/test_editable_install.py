"""The README's install (`pip install --no-deps -e .`) as a user's type checker and interpreter see it.

setup.cfg makes the editable install a link tree on a plain path (setuptools' strict mode), so mypy
on a script outside the repository, with no MYPYPATH, sees the typed API; the README's library
example type-checks and its names are not Any. A module added after the install is missing from
the link tree until the install is run again: the second test says so instead of an ImportError
deep in a run.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
REINSTALL = "run `pip install --no-deps -e .` again (the editable install links files: setup.cfg)"


def _readme_library_example() -> str:
    section = (REPO / "README.md").read_text().split("## In a chat backend", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)  # type: ignore[union-attr]


def _package_modules() -> list[str]:
    mapping = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    names = []
    for package, folder in mapping.items():
        for path in sorted((REPO / folder).glob("*.py")):
            names.append(package if path.stem == "__init__" else f"{package}.{path.stem}")
    return names


def test_every_module_of_the_source_is_importable_as_installed() -> None:
    missing = [name for name in _package_modules() if importlib.util.find_spec(name) is None]
    assert not missing, f"{missing} not in the installed package: {REINSTALL}"


def test_a_users_script_outside_the_repository_sees_the_typed_api(tmp_path: Path) -> None:
    """mypy from another folder, no MYPYPATH, the project's config not in reach: the README's example
    checks clean under --strict and its results have their real types."""
    script = tmp_path / "chat_backend.py"
    script.write_text(_readme_library_example() + "\nreveal_type(result)\nreveal_type(result.citations)\n"
                      "reveal_type(result.citations[0].source_path)\nreveal_type(result.decision)\n")
    env = {k: v for k, v in os.environ.items() if k not in ("MYPYPATH", "PYTHONPATH")}
    done = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir",
                           str(tmp_path / ".mypy_cache"), script.name],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    out = done.stdout + done.stderr
    revealed = re.findall(r'Revealed type is "([^"]+)"', out)
    assert "import-not-found" not in out and "import-untyped" not in out, f"{REINSTALL}?\n{out}"
    assert revealed == ["rag.context.result.ContextResult", "list[rag.context.assemble.Citation]",
                        "str", "rag.types.Decision"], out
    # the example's own lines are clean (the reveal_type notes aside)
    assert re.search(r"^Success|Found \d+ errors?", out, re.M) and "error:" not in out, out


def test_data_folders_are_read_from_the_source() -> None:
    """A SQL file or prompt added after the install is found: the folders are resolved through a file."""
    from rag.prompts import PROMPTS_DIR
    from rag.store.migrate import migrations_dir, sql_files

    assert PROMPTS_DIR == REPO / "rag" / "prompts"
    assert migrations_dir() == REPO / "db" / "migrations"
    assert sql_files() and all(p.parent == REPO / "db" / "sql" for p in sql_files())
