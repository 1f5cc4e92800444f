"""docker-compose.yml wires a pgvector Postgres and the ragpg server through DATABASE_URL."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

COMPOSE = Path(__file__).resolve().parents[2] / "docker-compose.yml"


def test_compose_services_and_database_url_wiring():
    spec = yaml.safe_load(COMPOSE.read_text())
    services = spec["services"]
    assert set(services) == {"db", "ragpg"}
    db = services["db"]
    assert db["image"].startswith("pgvector/pgvector:")
    env = db["environment"]

    url = services["ragpg"]["environment"]["DATABASE_URL"]
    m = re.fullmatch(r"postgresql://(?P<user>[^:]+):(?P<pw>[^@]+)@(?P<host>[^:/]+):(?P<port>\d+)/(?P<db>\w+)", url)
    assert m, url
    assert m["host"] == "db" and m["port"] == "5432"
    assert m["user"] == env["POSTGRES_USER"] and m["db"] == env["POSTGRES_DB"]
    assert m["pw"] == env["POSTGRES_PASSWORD"]
    assert services["ragpg"]["depends_on"]["db"]["condition"] == "service_healthy"
    assert "ragpg db upgrade" in " ".join(services["ragpg"]["command"])
