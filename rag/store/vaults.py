"""Vaults: named roots of indexable documents (a notes folder, or a BEIR corpus folder).

Every function takes an open psycopg connection and reads rows into dataclasses, so callers can
use any row factory. Writes run in their own transaction block (a savepoint when the caller is
already in one).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from psycopg import sql
from psycopg.rows import class_row
from psycopg.types.json import Jsonb

from rag.errors import InputError, NotFoundError
from rag.store.database import Connection, fetch_column

VaultKind = Literal["folder", "beir"]
VAULT_KINDS: tuple[VaultKind, ...] = ("folder", "beir")
# The same rule as the check constraint on vaults.name, so users get a sentence, not a constraint name.
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
BEIR_CORPUS_FILE = "corpus.jsonl"

_VAULT_COLUMNS = sql.SQL(
    "v.id, v.name, v.root_path, v.text_search_config::text as text_search_config, v.denylist, v.settings, "
    "v.created_at, v.last_indexed_at"
)


@dataclass(frozen=True)
class Vault:
    id: int
    name: str
    root_path: str
    text_search_config: str
    denylist: list[str]
    settings: dict[str, Any]
    created_at: datetime
    last_indexed_at: datetime | None

    @property
    def kind(self) -> VaultKind:
        kind = self.settings.get("kind", "folder")
        return kind if kind in VAULT_KINDS else "folder"

    @property
    def root(self) -> Path:
        return Path(self.root_path)


@dataclass(frozen=True)
class VaultSummary(Vault):
    """A vault with how much is indexed from it."""

    documents: int
    chunks: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name, "path": self.root_path, "kind": self.settings.get("kind", "folder"),
            "documents": self.documents, "chunks": self.chunks,
            "last_indexed_at": self.last_indexed_at.isoformat() if self.last_indexed_at else None,
            "text_search_config": self.text_search_config, "denylist": list(self.denylist),
        }


@dataclass
class NewVault:
    """What `add_vault` needs; `kind` decides how the root is read (folder walk or BEIR corpus)."""

    name: str
    path: Path
    kind: VaultKind = "folder"
    denylist: Sequence[str] = ()
    text_search_config: str = "english"
    extra_settings: dict[str, Any] = field(default_factory=dict)


def validate_name(name: str) -> str:
    if not NAME_RE.match(name):
        raise InputError(
            f"invalid vault name {name!r}: use 1-64 letters, digits, '_', '.' or '-', starting with a letter or digit"
        )
    return name


def _validate_root(path: Path, kind: VaultKind) -> Path:
    root = path.expanduser()
    if not root.exists():
        raise NotFoundError(f"vault path does not exist: {root}")
    if not root.is_dir():
        raise InputError(f"vault path is not a folder: {root}")
    if kind == "beir" and not (root / BEIR_CORPUS_FILE).is_file():
        raise InputError(f"not a BEIR dataset folder (no {BEIR_CORPUS_FILE}): {root}")
    return root.resolve()


def _validate_text_search_config(conn: Connection, config: str) -> str:
    names = fetch_column(conn, str, "select cfgname::text from pg_ts_config order by cfgname")
    if config not in names:
        raise InputError(f"unknown text search configuration {config!r}; available: {', '.join(names)}")
    return config


@dataclass(frozen=True)
class Registration:
    vault: Vault
    created: bool  # False: the same vault was already registered, and nothing changed


def add_vault(conn: Connection, new: NewVault) -> Vault:
    """Register a vault (see `register_vault`)."""
    return register_vault(conn, new).vault


def register_vault(conn: Connection, new: NewVault) -> Registration:
    """Register a vault, or find it already registered with the same folder and options (nothing
    changes then). Fails, creating nothing, on a bad name, a missing path, or a name taken by
    another folder or with other options."""
    name = validate_name(new.name)
    root = _validate_root(Path(new.path), new.kind)
    config = _validate_text_search_config(conn, new.text_search_config)
    denylist = [g.strip() for g in new.denylist if g.strip()]
    settings = {**new.extra_settings, "kind": new.kind}
    query = sql.SQL(
        "insert into vaults as v (name, root_path, text_search_config, denylist, settings) "
        "values (%s, %s, %s::regconfig, %s, %s) on conflict (name) do nothing returning {}"
    ).format(_VAULT_COLUMNS)
    with conn.transaction(), conn.cursor(row_factory=class_row(Vault)) as cur:
        row = cur.execute(query, (name, str(root), config, denylist, Jsonb(settings))).fetchone()
    if row is not None:
        return Registration(row, True)
    existing = get_vault(conn, name)
    if existing.root_path != str(root):
        raise InputError(f"vault '{name}' already exists (path {existing.root_path}); pick another name")
    # What the caller chose; indexing keeps notes of its own in vaults.settings (e.g. root_marker).
    wanted = {"kind": new.kind, "text search config": config, "denylist": denylist, **new.extra_settings}
    held = {"kind": existing.kind, "text search config": existing.text_search_config,
            "denylist": existing.denylist, **{k: existing.settings.get(k) for k in new.extra_settings}}
    differs = [key for key in wanted if wanted[key] != held[key]]
    if differs:
        shown = ", ".join(f"{key} {held[key]}" for key in differs)
        raise InputError(f"vault '{name}' already exists at {existing.root_path} with {shown}; "
                         "remove it first to change its options")
    return Registration(existing, False)


def get_vault(conn: Connection, name: str) -> Vault:
    query = sql.SQL("select {} from vaults v where v.name = %s").format(_VAULT_COLUMNS)
    with conn.cursor(row_factory=class_row(Vault)) as cur:
        row = cur.execute(query, (name,)).fetchone()
    if row is None:
        raise unknown_vault(name, vault_names(conn))
    return row


def all_vaults(conn: Connection) -> list[Vault]:
    query = sql.SQL("select {} from vaults v order by v.name").format(_VAULT_COLUMNS)
    with conn.cursor(row_factory=class_row(Vault)) as cur:
        return cur.execute(query).fetchall()


def resolve_vaults(conn: Connection, names: Sequence[str] | None) -> list[Vault]:
    """The named vaults in the order given (duplicates dropped); none named means every vault."""
    if not names:
        return all_vaults(conn)
    return [get_vault(conn, n) for n in dict.fromkeys(names)]


# -- "the vault must exist": the one rule and its one message, for every door -----------------------

# Characters that end a line, steer a terminal or break the quoting: a name holding one is shown
# JSON-escaped, so a hostile name cannot forge a log or terminal line. ragpg_vault_label in SQL agrees.
_UNSAFE_IN_LABEL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029'\\]")
_LABEL_CHARS = 60


def vault_label(name: str) -> str:
    """A vault name as error messages show it: 'name', or JSON-quoted, escaped and bounded when odd."""
    if len(name) <= _LABEL_CHARS and not _UNSAFE_IN_LABEL.search(name):
        return f"'{name}'"
    shown = name if len(name) <= _LABEL_CHARS else name[:_LABEL_CHARS - 3] + "..."
    quoted = json.dumps(shown, ensure_ascii=False)
    return re.sub(r"[\x7f-\x9f\u2028\u2029]", lambda m: f"\\u{ord(m.group()):04x}", quoted)


def unknown_vault(name: str, known: Sequence[str]) -> NotFoundError:
    """The error for a vault name that is not registered (the SQL functions word it the same way)."""
    return NotFoundError(f"unknown vault {vault_label(name)} (known: {', '.join(known) or 'none'})")


def vault_names(conn: Connection) -> list[str]:
    """Every registered vault's name, sorted."""
    return fetch_column(conn, str, "select name from vaults order by name")


def check_known(names: Sequence[str], known: Sequence[str]) -> list[str]:
    """`names` without duplicates, in the order given, when each is a known vault; else the error
    naming the first unknown one."""
    wanted = list(dict.fromkeys(names))
    missing = [n for n in wanted if n not in known]
    if missing:
        raise unknown_vault(missing[0], known)
    return wanted


def resolve_vault_names(conn: Connection, names: Sequence[str] | None) -> list[str] | None:
    """Check that each named vault exists; None (every vault) stays None."""
    if names is None:
        return None
    return check_known(names, vault_names(conn)) if names else []


def list_vaults(conn: Connection, readable_levels: Sequence[str] | None = None) -> list[VaultSummary]:
    """Every vault with its document and chunk counts; with `readable_levels`, only documents (and
    their chunks) at those confidentiality levels are counted, so a caller without clearance cannot
    learn how much restricted material a vault holds."""
    visible = sql.SQL("true") if readable_levels is None else sql.SQL("d.confidentiality = any(%(levels)s)")
    query = sql.SQL(
        "select {}, "
        " (select count(*) from documents d where d.vault_id = v.id and {visible})::int as documents, "
        " (select count(*) from chunks c join documents d on d.id = c.document_id"
        "   where c.vault_id = v.id and {visible})::int as chunks "
        "from vaults v order by v.name"
    ).format(_VAULT_COLUMNS, visible=visible)
    params = {} if readable_levels is None else {"levels": list(readable_levels)}
    with conn.cursor(row_factory=class_row(VaultSummary)) as cur:
        return cur.execute(query, params).fetchall()


def remove_vault(conn: Connection, name: str) -> VaultSummary:
    """Delete a vault and everything indexed from it; returns what it held."""
    summary = next((s for s in list_vaults(conn) if s.name == name), None)
    if summary is None:
        raise unknown_vault(name, vault_names(conn))
    with conn.transaction():
        # The vault's partitions are dropped with it (db/sql/12_vault_partitions.sql): no row of its
        # chunks, vectors or postings is deleted one by one, and no BM25 trigger runs.
        conn.execute("delete from vaults where id = %s", (summary.id,))
    return summary


def mark_indexed(conn: Connection, vault_id: int) -> None:
    with conn.transaction():
        conn.execute("update vaults set last_indexed_at = now() where id = %s", (vault_id,))
