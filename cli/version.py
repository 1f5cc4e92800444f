"""`ragpg --version`: the installed distribution's version (the package's own when not installed)."""

from __future__ import annotations

import importlib.metadata
import platform


def ragpg_version() -> str:
    try:
        return importlib.metadata.version("ragpg")
    except importlib.metadata.PackageNotFoundError:
        import rag

        return rag.__version__


def version_line() -> str:
    return f"ragpg {ragpg_version()} (Python {platform.python_version()})"
