"""The import graph of the installed packages, read with `ast` (nothing is imported).

Module names are the installed ones: rag/ is `rag`, server/ is `ragpg_server`, cli/ is `ragpg_cli`.
An edge records whether the import runs when the module loads (top level) or later (inside a
function); imports under `if TYPE_CHECKING:` never run and are left out.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
#: installed package name -> folder in the repository
PACKAGES = {"rag": "rag", "ragpg_server": "server", "ragpg_cli": "cli"}
#: folders of scripts, which import each other by file name (the script's folder is on sys.path)
SCRIPT_FOLDERS = ("bench", "eval")


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    top_level: bool


def module_files() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package, folder in PACKAGES.items():
        for path in sorted((REPO / folder).rglob("*.py")):
            parts = [package, *path.relative_to(REPO / folder).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    for folder in SCRIPT_FOLDERS:
        for path in sorted((REPO / folder).glob("*.py")):
            found[path.stem] = path
    return found


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.Module) -> list[tuple[str, bool]]:
    """(imported name, top level?) for every import statement that can run."""
    out: list[tuple[str, bool]] = []

    def visit(nodes: list[ast.stmt], top: bool) -> None:
        for node in nodes:
            if isinstance(node, ast.If) and _is_type_checking(node):
                visit(node.orelse, top)
                continue
            if isinstance(node, ast.Import):
                out.extend((alias.name, top) for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                out.extend((f"{node.module}.{alias.name}", top) for alias in node.names)
                out.append((node.module, top))
            inner_top = top and not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
            for field in ("body", "orelse", "finalbody", "handlers"):
                children = getattr(node, field, None)
                if isinstance(children, list):
                    visit([c for c in children if isinstance(c, ast.stmt | ast.ExceptHandler)], inner_top)
            if isinstance(node, ast.ExceptHandler):
                visit(node.body, inner_top)

    visit(tree.body, True)
    return out


def edges() -> list[Edge]:
    files = module_files()
    result: set[Edge] = set()
    for source, path in files.items():
        for name, top in _imports(ast.parse(path.read_text(encoding="utf-8"))):
            # `from rag.store import vaults` names a module; `from rag.store.vaults import X` its parent.
            target = name if name in files else name.rpartition(".")[0] if name.rpartition(".")[0] in files else None
            if target is None and name.split(".")[0] in ("server", "cli", "db"):
                target = name  # an import of a generic top-level name: reported by the contracts
            if target and target != source:
                result.add(Edge(source, target, top))
    return sorted(result, key=lambda e: (e.source, e.target, e.top_level))


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def stage_of(module: str) -> str:
    """`rag.retrieval.rank` -> `rag.retrieval`; a top-level rag module is its own stage."""
    parts = module.split(".")
    if parts[0] != "rag" or len(parts) == 1:
        return parts[0]
    return ".".join(parts[:2])
