"""Layer contracts over the import graph (issue #20), checked in CI with the rest of the suite.

- the library never imports the HTTP server or the CLI (they sit on top of it);
- nothing imports a generic top-level `server`, `cli` or `db` (they install as ragpg_server,
  ragpg_cli and rag.db);
- no import cycle between modules, counting imports made inside functions too;
- no cycle between rag's stages (its subpackages and top-level modules) among the imports that
  run at load time. A function-level import may reach back up a stage to keep `import rag` cheap
  (the runtime builds the embedder on first use), never into a cycle of modules;
- the runtime is a composition root: the store's connections, the embedder, the LLM and the tracer,
  nothing else of the store and nothing of retrieval, which receives it;
- no module over 400 lines.
"""

from __future__ import annotations

import ast
import tomllib

from tests.layout.imports import PACKAGES, REPO, cycles, edges, module_files, stage_of

MAX_MODULE_LINES = 400


def test_rag_imports_neither_the_server_nor_the_cli() -> None:
    bad = [e for e in edges() if e.source.split(".")[0] == "rag"
           and e.target.split(".")[0] in ("ragpg_server", "ragpg_cli", "server", "cli")]
    assert bad == []


def test_nothing_imports_generic_top_level_names() -> None:
    bad = [e for e in edges() if e.target.split(".")[0] in ("server", "cli", "db")]
    assert bad == []


def test_no_module_import_cycles() -> None:
    graph: dict[str, set[str]] = {}
    for e in edges():
        graph.setdefault(e.source, set()).add(e.target)
    assert cycles(graph) == []


def test_no_cycles_between_rag_stages() -> None:
    graph: dict[str, set[str]] = {}
    for e in edges():
        a, b = stage_of(e.source), stage_of(e.target)
        if e.top_level and a != b and a.startswith("rag") and b.startswith("rag"):
            graph.setdefault(a, set()).add(b)
    assert cycles(graph) == []


def test_the_runtime_is_a_composition_root_that_retrieval_receives() -> None:
    """rag.runtime composes the store's connections (rag.store.pools), the embedder, the LLM and the
    tracer: it reaches into no other part of the store and never up into retrieval, and the
    retrieval stage names the runtime it is handed for types only."""
    from_runtime = {e.target for e in edges() if e.source == "rag.runtime"}
    assert sorted(t for t in from_runtime if t.startswith("rag.retrieval")) == []
    assert sorted(t for t in from_runtime if t.startswith("rag.store.")) == ["rag.store.pools"]
    assert sorted(e.source for e in edges() if e.target == "rag.runtime" and stage_of(e.source) == "rag.retrieval") == []


def test_no_module_over_the_line_limit() -> None:
    long = {str(path.relative_to(REPO)): n for path in module_files().values()
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}
    assert long == {}


def test_every_rag_folder_says_what_it_owns_and_may_import() -> None:
    missing = []
    for name, path in module_files().items():
        if path.name == "__init__.py" and name.startswith("rag."):
            doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
            if "May import" not in doc:
                missing.append(name)
    assert missing == []


def test_pyproject_lists_every_package_folder() -> None:
    """Packages are listed by hand (package-dir maps folders to other names), so a new folder
    left out of the list would be missing from the wheel."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    folders = {**PACKAGES, "rag.db": "db"}
    assert config["package-dir"] == folders
    on_disk = set()
    for package, folder in folders.items():
        for init in (REPO / folder).rglob("__init__.py"):
            parts = init.parent.relative_to(REPO / folder).parts
            on_disk.add(".".join((package, *parts)))
    assert set(config["packages"]) == on_disk
