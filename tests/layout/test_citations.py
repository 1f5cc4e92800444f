"""What the code cites exists: every repository path named in a comment or docstring (Python, SQL,
the build and CI files, the web page's scripts), every link and repository path in the README and
docs/, and every `rag...`/`ragpg_cli...`/`ragpg_server...` dotted name there, resolves.

A path counts as a citation of the repository when it starts with one of the repository's top-level
folders (`rag/retrieval/passes.py`), names a db/sql file (`60_hybrid.sql`), a top-level file
(`pyproject.toml`) or an upper-case document (`README.md`). Example note names (`projects/alpha.md`)
and files of the user or a dataset (`corpus.jsonl`, `/tmp/x.json`) are not citations.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

from tests.layout.imports import REPO, module_files

_EXT = r"(?:py|md|sql|toml|yaml|yml|json|jsonl|txt|ini|js|html|css|lock|sh|cfg|mako|svg|png)"
PATH = re.compile(r"(?<![\w./~-])((?:[\w.-]+/)*[\w.-]+\." + _EXT + r")(?![\w/])")
SQL_FILE = re.compile(r"^\d\d_\w+\.sql$")
DOCUMENT = re.compile(r"^[A-Z][A-Z_]+\.md$")
URL = re.compile(r"\w+://\S+")
LINK = re.compile(r"\]\(([^)\s]+)\)")
DOTTED = re.compile(r"(?<![\w.])((?:rag|ragpg_cli|ragpg_server)(?:\.[A-Za-z_]\w*)+)")
TOP = {p.name for p in REPO.iterdir() if p.name not in (".git", ".venv")}
CODE_FOLDERS = ("rag", "cli", "server", "bench", "eval", "tests", "db", "typecheck")
HASH_COMMENTED = ("pyproject.toml", ".ci/run", "Dockerfile", "docker-compose.yml", "alembic.ini", ".dockerignore")

Text = tuple[Path, int, str]  # file, line, comment or docstring


def _python(path: Path) -> Iterator[Text]:
    source = path.read_text(encoding="utf-8")
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield path, token.start[0], token.string
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                yield path, node.body[0].lineno, doc


def _after(path: Path, marker: str) -> Iterator[Text]:
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if marker in line:
            yield path, number, line[line.index(marker):]


def _code_texts() -> Iterator[Text]:
    for folder in CODE_FOLDERS:
        for path in sorted((REPO / folder).rglob("*.py")):
            yield from _python(path)
    for path in sorted((REPO / "db" / "sql").glob("*.sql")):
        yield from _after(path, "--")
    for name in HASH_COMMENTED:
        if (REPO / name).exists():
            yield from _after(REPO / name, "#")
    for path in sorted((REPO / "server" / "static").glob("*.js")):
        yield from _after(path, "//")


def _documents() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), *sorted(REPO.glob("*/README.md"))]


def _cited(text: str) -> Iterator[tuple[str, Path]]:
    for match in PATH.finditer(URL.sub(" ", text)):
        name = match.group(1)
        if "/" in name and name.split("/")[0] in TOP:
            yield name, REPO / name
        elif "/" not in name and SQL_FILE.match(name):
            yield name, REPO / "db" / "sql" / name
        elif "/" not in name and (name in TOP or DOCUMENT.match(name)):
            yield name, REPO / name


def _where(path: Path, line: int) -> str:
    return f"{path.relative_to(REPO)}:{line}"


def test_comments_and_docstrings_cite_files_that_exist() -> None:
    missing = [f"{_where(path, line)}: {name}" for path, line, text in _code_texts()
               for name, target in _cited(text) if not target.exists()]
    assert missing == []


def test_the_docs_link_and_cite_files_that_exist() -> None:
    missing = []
    for doc in _documents():
        text = doc.read_text(encoding="utf-8")
        for match in LINK.finditer(text):
            target = match.group(1).split("#")[0]
            if target and "://" not in target and not (doc.parent / target).exists():
                missing.append(f"{doc.relative_to(REPO)}: link {target}")
        missing += [f"{doc.relative_to(REPO)}: {name}" for name, target in _cited(text) if not target.exists()]
    assert missing == []


def _top_level_names(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        inner = [*node.body, *node.orelse] if isinstance(node, ast.If | ast.Try) else [node]
        for item in inner:
            if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(item.name)
            elif isinstance(item, ast.Import | ast.ImportFrom):
                names.update((alias.asname or alias.name).split(".")[0] for alias in item.names)
            elif isinstance(item, ast.Assign | ast.AnnAssign):
                targets = item.targets if isinstance(item, ast.Assign) else [item.target]
                names.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
                if isinstance(item.value, ast.Dict):  # a lazy public face: {"compute_context": (...)}
                    names.update(k.value for k in item.value.keys if isinstance(k, ast.Constant))
    return names


def _resolves(dotted: str, modules: dict[str, Path]) -> bool:
    parts = dotted.split(".")
    if parts[:2] == ["rag", "db"]:  # db/ installs as rag.db (migrations, SQL files)
        return (REPO / "db" / "/".join(parts[2:])).exists() or len(parts) == 2
    for end in range(len(parts), 0, -1):
        module = ".".join(parts[:end])
        if module in modules:
            rest = parts[end:]
            return not rest or rest[0] in _top_level_names(modules[module])
    return False


def test_dotted_names_resolve() -> None:
    modules = module_files()
    texts = [*_code_texts(), *((doc, 0, doc.read_text(encoding="utf-8")) for doc in _documents())]
    missing = sorted({f"{_where(path, line)}: {name}" for path, line, text in texts
                      for name in (m.group(1) for m in DOTTED.finditer(text)) if not _resolves(name, modules)})
    assert missing == []


def test_the_check_finds_what_it_looks_for() -> None:
    """The rules catch a stale citation of each kind (and let example note names pass)."""
    assert [name for name, target in _cited("see DESIGN.md § Orchestrator, rag/profiles.py, "
                                            "99_nothing.sql; notes/a.md, corpus.jsonl, /tmp/x.json")
            if not target.exists()] == ["DESIGN.md", "rag/profiles.py", "99_nothing.sql"]
    modules = module_files()
    assert not _resolves("rag.passes", modules) and not _resolves("rag.retrieval.rank.no_such_name", modules)
    assert _resolves("rag.retrieval.rank.metadata_boost", modules) and _resolves("rag.retrieval.rank", modules)
    assert _resolves("rag.compute_context", modules) and _resolves("rag.db.sql", modules)
