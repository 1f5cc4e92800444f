"""Vault registration: add, list, remove, and the bad inputs of `vault add` (nothing created on failure)."""

from __future__ import annotations

import json
from pathlib import Path

import psycopg
import pytest

from rag.errors import InputError, NotFoundError
from rag.store.vaults import (
    NewVault,
    add_vault,
    get_vault,
    list_vaults,
    register_vault,
    remove_vault,
    resolve_vault_names,
)
from tests.ingest_db.helpers import add, index
from tests.support.files import write_files


def vault_count(conn: psycopg.Connection) -> int:
    return conn.execute("select count(*) as n from vaults").fetchone()["n"]


def test_add_list_remove(aconn: psycopg.Connection, settings, tmp_path: Path) -> None:
    root = write_files(tmp_path / "notes", {"a.md": "# A\n\nalpha\n", "b/c.md": "gamma\n"})
    vault = add(aconn, "notes", root, denylist=["private/**", " "], text_search_config="simple")
    assert (vault.name, vault.root_path, vault.kind) == ("notes", str(root.resolve()), "folder")
    assert vault.denylist == ["private/**"] and vault.text_search_config == "simple"
    [summary] = list_vaults(aconn)
    assert (summary.documents, summary.chunks, summary.last_indexed_at) == (0, 0, None)

    index(settings, "notes")
    [summary] = list_vaults(aconn)
    assert (summary.documents, summary.chunks) == (2, 2) and summary.last_indexed_at is not None
    assert {r["text_search_config"] for r in aconn.execute("select text_search_config::text from chunks")} == {"simple"}

    gone = remove_vault(aconn, "notes")
    assert (gone.documents, gone.chunks) == (2, 2)
    for table in ("vaults", "documents", "chunks", "bm25_vault_stats", "bm25_term_stats"):
        assert aconn.execute(f"select count(*) as n from {table}").fetchone()["n"] == 0, table


def test_missing_path_creates_nothing(aconn: psycopg.Connection, tmp_path: Path) -> None:
    with pytest.raises(NotFoundError, match="vault path does not exist: .*nowhere"):
        add(aconn, "v", tmp_path / "nowhere")
    (tmp_path / "file.md").write_text("x")
    with pytest.raises(InputError, match="not a folder"):
        add(aconn, "v", tmp_path / "file.md")
    assert vault_count(aconn) == 0


def test_name_taken_keeps_the_first(aconn: psycopg.Connection, tmp_path: Path) -> None:
    first = write_files(tmp_path / "one", {"a.md": "a"})
    add(aconn, "notes", first)
    with pytest.raises(InputError, match=r"vault 'notes' already exists \(path .*one\)"):
        add(aconn, "notes", write_files(tmp_path / "two", {"b.md": "b"}))
    assert vault_count(aconn) == 1 and get_vault(aconn, "notes").root_path == str(first.resolve())


def test_adding_the_same_vault_again_changes_nothing(aconn: psycopg.Connection, tmp_path: Path) -> None:
    """`vault add` is idempotent: the same name at the same folder (however the path is spelled) is
    the vault already there; the same name with other options is refused, and nothing changes."""
    root = write_files(tmp_path / "notes", {"a.md": "a"})
    first = register_vault(aconn, NewVault(name="notes", path=root, denylist=["x/**"]))
    again = register_vault(aconn, NewVault(name="notes", path=tmp_path / "notes" / ".." / "notes", denylist=["x/**"]))
    assert first.created and not again.created and again.vault == first.vault
    assert add(aconn, "notes", root, denylist=["x/**"]) == first.vault
    with pytest.raises(InputError, match=r"vault 'notes' already exists at .*notes with denylist \['x/\*\*'\]; "
                                         r"remove it first to change its options"):
        add(aconn, "notes", root)
    with pytest.raises(InputError, match=r"already exists at .* with text search config english"):
        add(aconn, "notes", root, denylist=["x/**"], text_search_config="simple")
    assert vault_count(aconn) == 1 and get_vault(aconn, "notes") == first.vault


@pytest.mark.parametrize("name", ["", "-x", "a b", "x" * 65, "naïve"])
def test_invalid_name(aconn: psycopg.Connection, tmp_path: Path, name: str) -> None:
    with pytest.raises(InputError, match="invalid vault name"):
        add(aconn, name, tmp_path)
    assert vault_count(aconn) == 0


def test_unknown_text_search_config(aconn: psycopg.Connection, tmp_path: Path) -> None:
    with pytest.raises(InputError, match="unknown text search configuration 'klingon'; available: .*english"):
        add(aconn, "v", tmp_path, text_search_config="klingon")
    assert vault_count(aconn) == 0


def test_beir_folder_needs_a_corpus(aconn: psycopg.Connection, tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no corpus.jsonl"):
        add_vault(aconn, NewVault(name="b", path=tmp_path, kind="beir"))
    assert vault_count(aconn) == 0


def test_resolve_vault_names(aconn: psycopg.Connection, tmp_path: Path) -> None:
    add(aconn, "a", tmp_path)
    assert resolve_vault_names(aconn, None) is None
    assert resolve_vault_names(aconn, ["a", "a"]) == ["a"]
    with pytest.raises(NotFoundError, match=r"^unknown vault 'zz' \(known: a\)$"):
        resolve_vault_names(aconn, ["a", "zz"])


def test_cli_vault_commands(cli, tmp_path: Path) -> None:
    root = write_files(tmp_path / "notes", {"a.md": "# A\n\nalpha\n"})
    code, out, err = cli("vault", "add", "notes", str(root), "--denylist", "drafts/**", "--json")
    assert code == 0 and json.loads(out)["denylist"] == ["drafts/**"]

    code, out, err = cli("vault", "add", "notes", str(root), "--denylist", "drafts/**")  # again: nothing to do
    assert code == 0 and out.strip() == f"Vault 'notes' (folder) is already registered at {root.resolve()}; nothing changed."
    code, out, err = cli("vault", "add", "notes", str(root), "--denylist", "drafts/**", "--json")
    assert code == 0 and json.loads(out)["created"] is False
    other = write_files(tmp_path / "other", {"b.md": "b"})
    code, out, err = cli("vault", "add", "notes", str(other))
    assert code == 2 and err.strip() == f"error: vault 'notes' already exists (path {root.resolve()}); pick another name"

    code, out, err = cli("vault", "add", "other", str(tmp_path / "missing"))
    assert code == 4 and "vault path does not exist" in err and err.count("\n") == 1

    assert cli("index", "--quiet")[0] == 0
    assert cli("vault", "add", "notes", str(root), "--denylist", "drafts/**")[0] == 0  # indexed: still the same
    code, out, err = cli("vault", "list", "--json")
    [listed] = json.loads(out)
    assert (listed["name"], listed["documents"], listed["chunks"]) == ("notes", 1, 1)
    assert listed["last_indexed_at"] is not None

    code, out, err = cli("vault", "list")
    assert out.splitlines()[0].split() == ["NAME", "PATH", "DOCUMENTS", "CHUNKS", "LAST", "INDEXED"]
    assert out.splitlines()[1].split()[:4] == ["notes", str(root.resolve()), "1", "1"]

    code, out, err = cli("vault", "remove", "notes", "--json")
    assert code == 0 and json.loads(out) == {"removed": "notes", "documents": 1, "chunks": 1}
    code, out, err = cli("vault", "remove", "notes")
    assert code == 4 and err.strip() == "error: unknown vault 'notes' (known: none)"
