"""`ragpg db console`: psql as a login role bound by row-level security (db/sql/80_security.sql)."""

from __future__ import annotations

import sys

from rag.access import levels_up_to
from rag.config import Settings
from rag.errors import InputError
from rag.store.database import open_connection
from rag.store.locate import resolve_database_url
from rag.store.row_security import ConsoleLogin, console_login
from rag.store.vaults import resolve_vault_names
from ragpg_cli.app import print_json
from ragpg_cli.psql import psql_invocation, run_psql


def _login(settings: Settings, clearance: str, vaults: list[str]) -> ConsoleLogin:
    levels_up_to(clearance)  # an unknown clearance is an InputError naming the choices
    url = resolve_database_url(settings)
    with open_connection(url) as conn:
        resolve_vault_names(conn, vaults)
        return console_login(conn, url, clearance, sorted(set(vaults)) or None,
                             settings.db.console_login_valid_h, settings.db)


def open_console(settings: Settings, clearance: str, vaults: list[str], psql_args: list[str], *,
                 json_out: bool, with_password: bool) -> int:
    if with_password and not json_out:
        raise InputError("--with-password only goes with --json")
    login = _login(settings, clearance, vaults)
    if json_out:
        print_json({"role": login.role, "conninfo": login.conninfo, "clearance": clearance,
                    "vaults": sorted(set(vaults)) or None, "valid_until": login.valid_until.isoformat(),
                    "password": login.password if with_password else "***"})
        return 0
    scope = ", ".join(sorted(set(vaults))) or "every vault"
    print(f"psql as {login.role}: clearance {clearance}, {scope} (login valid until "
          f"{login.valid_until:%Y-%m-%d %H:%M} UTC)", file=sys.stderr)
    # psql gets the login's conninfo and password, none of the owner's libpq settings
    return run_psql(*psql_invocation(login.conninfo, psql_args, password=login.password))
