"""Who may log in to the embedded server, and how: its pg_hba.conf.

The owner (the superuser ragpg connects as) is trusted over the Unix socket in the data dir, a folder
only the OS user who owns the data dir can enter, so reaching the socket is the proof. Every other
role (the `ragpg db console` logins) must give its password (scram-sha-256), and a password past its
VALID UNTIL is refused. TCP lines ask everyone, the owner too (who has no password), for one; the
server does not listen on TCP, but a line left for it fails closed.

ragpg owns this file: it is written when the cluster is made and rewritten at every start (clusters
made before issue 29 were initialised to trust every local login).
"""

from __future__ import annotations

from pathlib import Path

HBA_FILE = "pg_hba.conf"


def hba_text(owner: str) -> str:
    return (
        "# Written by ragpg at every start (rag/store/client_auth.py); edits are overwritten.\n"
        "# TYPE  DATABASE     USER    ADDRESS       METHOD\n"
        f"local   all          {owner}                trust\n"
        f"local   replication  {owner}                trust\n"
        "local   all          all                   scram-sha-256\n"
        "host    all          all     127.0.0.1/32  scram-sha-256\n"
        "host    all          all     ::1/128       scram-sha-256\n"
    )


def write_hba(pgdata: Path, owner: str) -> bool:
    """Make `pgdata`'s pg_hba.conf ragpg's; True when it changed (a running server must reload it).
    Written in place, so the file keeps its owner and mode (the server may run as another OS user)."""
    path = pgdata / HBA_FILE
    wanted = hba_text(owner)
    try:
        if path.read_text(encoding="utf-8") == wanted:
            return False
    except FileNotFoundError:
        pass
    with path.open("w", encoding="utf-8") as handle:
        handle.write(wanted)
    return True
