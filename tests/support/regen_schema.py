"""Regenerate db/schema/schema.latest.sql: `python -m tests.support.regen_schema`."""

from __future__ import annotations

from pathlib import Path

from rag.store import migrate
from tests.support.pg import TestServer

SNAPSHOT = Path(__file__).resolve().parents[2] / "db" / "schema" / "schema.latest.sql"


def main() -> None:
    server = TestServer()
    server.start()
    try:
        name = server.create_empty_database("snapshot")
        url = server.url(name)
        migrate.upgrade(url)
        SNAPSHOT.write_text(migrate.dump_schema(url))
        server.drop_database(name)
    finally:
        server.stop()
    print(f"wrote {SNAPSHOT}")


if __name__ == "__main__":
    main()
