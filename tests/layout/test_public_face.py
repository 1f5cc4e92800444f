"""The public face (`rag/__init__.py`): every exported name resolves, and `import rag` alone
loads none of the stages (the CLI and the server import only what a command needs)."""

from __future__ import annotations

import subprocess
import sys

import rag


def test_every_public_name_resolves() -> None:
    for name in rag.__all__:
        assert getattr(rag, name) is not None, name
    assert rag.index.__name__ == "index" and rag.index.__module__ == "rag.indexing"
    assert issubclass(rag.NotFoundError, rag.InputError) and issubclass(rag.InputError, rag.RagError)


def test_import_rag_is_cheap() -> None:
    out = subprocess.run([sys.executable, "-c", "import sys, rag; print(sorted(m for m in sys.modules "
                          "if m.startswith('rag.')))"], check=True, capture_output=True, text=True).stdout
    assert out.strip() == "[]"


def test_the_cli_and_ask_start_without_the_migration_stack() -> None:
    """alembic and SQLAlchemy serve `ragpg db upgrade` and the embedded server's first start only;
    loaded by every command they were a quarter second of each `ragpg ask`."""
    code = ("import sys, ragpg_cli.main, rag.notes.ask, rag.compute; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('alembic', 'sqlalchemy')))")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert out.strip() == "[]"


def test_the_type_checker_sees_every_public_name_where_it_is_loaded() -> None:
    """The names under TYPE_CHECKING (what mypy and IDEs see) and the lazy table (what runs) are the
    same names for the same objects."""
    import ast
    from pathlib import Path

    tree = ast.parse((Path(rag.__file__)).read_text(encoding="utf-8"))
    block = next(node for node in tree.body if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING")
    seen = {alias.asname or alias.name: (node.module, alias.name) for node in block.body
            if isinstance(node, ast.ImportFrom) for alias in node.names}
    assert seen == rag._EXPORTS


def test_compute_context_is_a_typed_callable_to_a_users_type_checker(tmp_path) -> None:
    """A user's `mypy --strict` sees the real signatures and the typed records, not Any."""
    from pathlib import Path

    user = tmp_path / "user.py"
    user.write_text("\n".join([
        "from rag import ask, compute_context, index, related, search",
        "reveal_type(compute_context)",
        "result = compute_context('q')",
        "reveal_type(result.citations[0].source_path)",
        "reveal_type(result.decision.route)",
        "reveal_type(result.evidence_full.items[0].scores.final)",
        "reveal_type(ask('q').references[0].lines)",
        "reveal_type(search('q').items[0].score)",
        "compute_context(3)",
        "reveal_type(ask)",
        "reveal_type(ask('q').debug)",
        "reveal_type(ask('q').decision.rule)",
        "reveal_type(index)",
        "reveal_type(search)",
        "ask('q', detail='verbose')",
        "ask('q', ['notes'])",
        "reveal_type(related)",
    ]) + "\n", encoding="utf-8")
    repo = Path(rag.__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent", "--no-incremental",
                           str(user)], capture_output=True, text=True, cwd=tmp_path,
                          env={"MYPYPATH": str(repo), "PATH": "/usr/bin:/bin"})
    revealed = [line.split('Revealed type is "', 1)[1].rstrip('"') for line in done.stdout.splitlines()
                if "Revealed type is" in line]
    assert len(revealed) == 12, done.stdout + done.stderr
    signature = revealed[0]
    assert signature.startswith("def (query: str, *, vaults: typing.Sequence[str] | None =")
    assert "mode: Literal['auto'] | Literal['base']" in signature and "budget_tokens: int =" in signature
    assert signature.endswith("-> rag.context.result.ContextResult")
    assert revealed[1:6] == ["str", "str", "float", "str | None", "float"]
    assert 'Argument 1 to "compute_context" has incompatible type "int"; expected "str"' in done.stdout
    # one public face: the first argument, then keyword-only; closed choices as Literal; a typed record
    ask_sig, trace, rule, index_sig, search_sig, related_sig = revealed[6:]
    assert related_sig.startswith("def (note: str, *, vault: str | None =") and "runtime:" in related_sig
    assert related_sig.endswith("-> rag.retrieval.related.RelatedNotes")
    assert ask_sig.startswith("def (question: str, *, vaults: typing.Sequence[str] | None =")
    assert "detail: Literal['brief'] | Literal['normal'] | Literal['detailed'] =" in ask_sig
    assert "runtime: rag.runtime.Runtime | None =" in ask_sig and ask_sig.endswith("-> rag.notes.results.AskResponse")
    assert trace == "rag.notes.ask_trace.AskTrace | None"
    assert rule.startswith("Literal['nothing_found'] | Literal['names_missing'] | Literal['model']")
    assert index_sig.startswith("def (vaults: typing.Sequence[str] | None =, *, allow_empty: bool =")
    assert "runtime: rag.runtime.Runtime | None =" in index_sig
    assert search_sig.startswith("def (query: str, *, vaults:") and "by: Literal['note'] | Literal['passage']" in search_sig
    assert 'Argument "detail" to "ask" has incompatible type' in done.stdout
    assert 'Too many positional arguments for "ask"' in done.stdout
