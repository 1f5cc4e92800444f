"""API keys: random secrets shown once, stored as sha256 hashes, scoped to vaults and a clearance."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime

import psycopg
from psycopg import sql
from psycopg.rows import class_row

from rag.access import Scope, levels_up_to
from rag.errors import AuthError, InputError, NotFoundError
from rag.store.database import Connection

KEY_PREFIX = "rpg_"
KEY_RANDOM_BYTES = 32
DISPLAY_PREFIX_CHARS = 10


@dataclass(frozen=True)
class ApiKey:
    id: int
    name: str
    key_prefix: str
    vaults: list[str]
    all_vaults: bool
    clearance: str
    created_at: datetime
    revoked_at: datetime | None
    last_used_at: datetime | None
    can_index: bool = False

    @property
    def scope(self) -> Scope:
        return Scope(vaults=None if self.all_vaults else tuple(self.vaults), clearance=self.clearance,
                     principal=self.name, can_index=self.can_index)


_COLUMNS = sql.SQL(", ").join(
    sql.Identifier(c) for c in ("id", "name", "key_prefix", "vaults", "all_vaults", "clearance", "created_at",
                                "revoked_at", "last_used_at", "can_index"))


def hash_key(plaintext: str) -> str:
    # Keys are 256-bit random strings, so a fast unsalted hash is enough to make a leaked table useless.
    return hashlib.sha256(plaintext.encode()).hexdigest()


def create_key(conn: Connection, name: str, *, vaults: list[str], clearance: str = "public",
               all_vaults: bool = False, can_index: bool = False,
               plaintext: str | None = None) -> tuple[ApiKey, str]:
    """Create a key; returns the row and the plaintext key (shown once, never stored). `plaintext`
    supplies the key material instead of a random one (rag.key_bootstrap checks it first). Every
    named vault must exist: a key for a missing one would read whatever vault later takes the name."""
    from rag.store.vaults import resolve_vault_names, validate_name

    levels_up_to(clearance)
    if all_vaults and vaults:
        raise InputError("a key is scoped to either --vault names or --all-vaults, not both")
    if not all_vaults and not vaults:
        raise InputError("a key needs at least one --vault, or --all-vaults")
    for vault in vaults:
        validate_name(vault)
    vaults = list(dict.fromkeys(vaults))
    plaintext = plaintext or KEY_PREFIX + secrets.token_urlsafe(KEY_RANDOM_BYTES)
    try:
        with conn.transaction(), conn.cursor(row_factory=class_row(ApiKey)) as cur:
            resolve_vault_names(conn, vaults or None)  # in the key's transaction: no vault vanishes meanwhile
            cur.execute(
                sql.SQL("insert into api_keys (name, key_prefix, key_hash, vaults, all_vaults, clearance, can_index)"
                        " values (%s, %s, %s, %s, %s, %s, %s) returning {}").format(_COLUMNS),
                (name, plaintext[:DISPLAY_PREFIX_CHARS], hash_key(plaintext), vaults, all_vaults, clearance,
                 can_index))
            row = cur.fetchone()
    except psycopg.errors.UniqueViolation:
        raise InputError(f"an API key named '{name}' already exists") from None
    except psycopg.errors.CheckViolation:
        raise InputError("key names must be 1-100 characters") from None
    assert row is not None
    return row, plaintext


def list_keys(conn: Connection) -> list[ApiKey]:
    with conn.cursor(row_factory=class_row(ApiKey)) as cur:
        return cur.execute(sql.SQL("select {} from api_keys order by id").format(_COLUMNS)).fetchall()


def revoke_key(conn: Connection, name: str) -> ApiKey:
    with conn.transaction(), conn.cursor(row_factory=class_row(ApiKey)) as cur:
        row = cur.execute(
            sql.SQL("update api_keys set revoked_at = coalesce(revoked_at, now()) where name = %s"
                    " returning {}").format(_COLUMNS), (name,)).fetchone()
    if row is None:
        raise NotFoundError(f"no API key named '{name}'")
    return row


def any_active_keys(conn: Connection) -> bool:
    row = conn.execute("select exists (select 1 from api_keys where revoked_at is null) as any").fetchone()
    return bool(row and (row["any"] if isinstance(row, dict) else row[0]))


def any_keys_ever(conn: Connection) -> bool:
    """True once a key was ever created, revoked or not: from then on `auto` auth requires keys."""
    row = conn.execute("select exists (select 1 from api_keys) as any").fetchone()
    return bool(row and (row["any"] if isinstance(row, dict) else row[0]))


def find_key(conn: Connection, plaintext: str) -> ApiKey | None:
    """The key (active or revoked) whose material is `plaintext`, without touching last_used_at."""
    with conn.cursor(row_factory=class_row(ApiKey)) as cur:
        return cur.execute(sql.SQL("select {} from api_keys where key_hash = %s").format(_COLUMNS),
                           (hash_key(plaintext),)).fetchone()


def authenticate(conn: Connection, plaintext: str | None, *, touch_interval_s: float = 0.0) -> ApiKey:
    """The active key matching `plaintext`, or AuthError (missing, unknown or revoked).

    `last_used_at` moves when it is older than `touch_interval_s`: a key used by every request is
    then read, not written, on all but one request per interval (no commit, no row lock that
    concurrent requests with the same key queue on)."""
    if not plaintext:
        raise AuthError("missing API key (send it as 'Authorization: Bearer <key>')")
    row = conn.execute(
        sql.SQL("select {}, last_used_at is null or last_used_at <= now() - make_interval(secs => %s) as stale "
                "from api_keys where key_hash = %s and revoked_at is null").format(_COLUMNS),
        (touch_interval_s, hash_key(plaintext))).fetchone()
    if row is None:
        if not conn.autocommit:
            conn.rollback()
        raise AuthError("invalid or revoked API key")
    if row.pop("stale"):
        conn.execute("update api_keys set last_used_at = now() where id = %s", (row["id"],))
    if not conn.autocommit:
        conn.commit()
    return ApiKey(**row)
