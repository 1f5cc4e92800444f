"""A first API key from configuration (`server.api_key`, env `RAGPG_SERVER__API_KEY`): what lets a
container start `ragpg serve --host 0.0.0.0` with authentication on, without an interactive
`ragpg keys create`.

At each start the key is looked up by its hash: present and active, nothing happens; absent, it is
created (all vaults, every level, may start index runs) under the name `env-<hash prefix>`;
revoked, the start is refused — revoking it must not be undone by a restart.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rag.errors import ConfigError
from rag.store import keys as key_store
from rag.store.database import Connection

MIN_KEY_CHARS = 24  # the key is a password on the network: short ones are guessable
NAME_PREFIX = "env-"
NAME_HASH_CHARS = 8
_ALLOWED = re.compile(r"^[\x21-\x7e]+$")  # printable ASCII, no spaces: it travels in an HTTP header


@dataclass(frozen=True)
class Bootstrap:
    name: str
    created: bool


def check_material(plaintext: str) -> str:
    if len(plaintext) < MIN_KEY_CHARS:
        raise ConfigError(f"server.api_key is {len(plaintext)} characters; use at least {MIN_KEY_CHARS} "
                          "(e.g. `python -c 'import secrets; print(secrets.token_urlsafe(32))'`)")
    if not _ALLOWED.match(plaintext):
        raise ConfigError("server.api_key must be printable ASCII without spaces (it is sent in an HTTP header)")
    return plaintext


def ensure_configured_key(conn: Connection, plaintext: str) -> Bootstrap:
    """Create the configured key unless it exists; ConfigError when it is too weak or was revoked."""
    check_material(plaintext)
    found = key_store.find_key(conn, plaintext)
    if found is not None:
        if found.revoked_at is not None:
            raise ConfigError(f"server.api_key is the revoked key '{found.name}': set a new one")
        return Bootstrap(found.name, created=False)
    name = NAME_PREFIX + key_store.hash_key(plaintext)[:NAME_HASH_CHARS]
    row, _ = key_store.create_key(conn, name, vaults=[], all_vaults=True, clearance="restricted", can_index=True,
                                  plaintext=plaintext)
    if not conn.autocommit:
        conn.commit()
    return Bootstrap(row.name, created=True)
