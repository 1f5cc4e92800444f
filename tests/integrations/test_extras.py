"""Importing rag never imports a framework; a retriever whose framework is missing says which extra
to install in one line. Each check runs in a fresh interpreter."""

from __future__ import annotations

import subprocess
import sys

import pytest


def _python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


def test_importing_rag_imports_no_framework() -> None:
    done = _python("import sys, rag, rag.compute, rag.integrations, rag.integrations.passages\n"
                   "from rag import compute_context, Runtime\n"
                   "print(sorted(m for m in sys.modules if m.split('.')[0] in ('langchain_core', 'llama_index')))")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize(("module", "blocked", "extra"), [
    ("rag.integrations.langchain", "langchain_core", "langchain"),
    ("rag.integrations.llamaindex", "llama_index.core", "llamaindex"),
])
def test_a_missing_framework_names_its_extra(module: str, blocked: str, extra: str) -> None:
    # a module set to None in sys.modules raises ImportError on import: the extra is "not installed"
    done = _python(f"import sys\nsys.modules[{blocked!r}] = None\n"
                   f"try:\n    import {module}\nexcept ImportError as e:\n    print(e)\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (f"{module} needs the '{extra}' extra: pip install 'ragpg[{extra}]' "
                                   f"(missing: {blocked})")
