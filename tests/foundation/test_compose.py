"""docker-compose.yml: valid against the Compose Specification's JSON schema (tests/data/compose_spec.json,
from the docker-compose 1.29.2 wheel; `docker compose config` itself needs Docker, which this machine
lacks), the database and the server wired through DATABASE_URL, the server on 0.0.0.0 only with a key
from the environment, health checks on both services, named volumes."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest
import yaml

from rag.config import ServerSettings
from ragpg_server.hosts import HostPolicy

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "docker-compose.yml"
SCHEMA = ROOT / "tests" / "data" / "compose_spec.json"
INTERPOLATION = re.compile(r"\$\{(?P<name>\w+)(?P<op>:?[-?])?(?P<arg>[^}]*)\}")


def spec() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


def test_compose_file_matches_the_compose_specification() -> None:
    schema = json.loads(SCHEMA.read_text())
    validator = jsonschema.Draft201909Validator(schema)
    errors = sorted(validator.iter_errors(spec()), key=lambda e: list(e.path))
    assert not errors, [f"{'/'.join(map(str, e.path))}: {e.message}" for e in errors]
    # the validator is awake: a misspelt key is an error
    bad = spec()
    bad["services"]["ragpg"]["helthcheck"] = {}
    assert any("helthcheck" in e.message for e in validator.iter_errors(bad))


def test_compose_services_and_database_url_wiring() -> None:
    services = spec()["services"]
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


def test_server_binds_every_interface_only_with_a_key_from_the_environment() -> None:
    ragpg = spec()["services"]["ragpg"]
    command = " ".join(ragpg["command"])
    assert "ragpg serve --host 0.0.0.0" in command
    key = INTERPOLATION.fullmatch(ragpg["environment"]["RAGPG_SERVER__API_KEY"])
    assert key and key["name"] == "RAGPG_API_KEY" and key["op"] == ":?"  # compose refuses to start without it
    assert "RAGPG_SERVER__AUTH" not in ragpg["environment"]  # never keyless on 0.0.0.0
    port = int(re.search(r"--port (\d+)", command)[1])
    assert ragpg["ports"] == [f"{port}:{port}"]


def test_health_checks_and_named_volumes() -> None:
    s = spec()
    for name, service in s["services"].items():
        check = service["healthcheck"]
        assert check["test"] and check["retries"] >= 1, name
    ragpg = s["services"]["ragpg"]
    assert "/healthz" in " ".join(ragpg["healthcheck"]["test"]) and ragpg["healthcheck"]["test"][0] == "CMD"
    declared = set(s["volumes"])
    used = {v.split(":")[0] for svc in s["services"].values() for v in svc.get("volumes", [])
            if not v.startswith((".", "/"))}
    assert used == declared == {"pgdata", "ragpg-data"}
    assert ragpg["environment"]["RAGPG_DATA_DIR"] == "/data" and "ragpg-data:/data" in ragpg["volumes"]


def test_the_healthcheck_command_is_valid_python() -> None:
    code = spec()["services"]["ragpg"]["healthcheck"]["test"][-1]
    compile(code, "healthcheck", "exec")


@pytest.mark.security
def test_the_server_answers_the_names_compose_uses_and_no_others() -> None:
    """The Host check (issue 29) on a 0.0.0.0 bind: the healthcheck's URL, the service name other
    services use, and localhost through the published port pass; any other name is refused."""
    ragpg = spec()["services"]["ragpg"]
    port = int(re.search(r"--port (\d+)", " ".join(ragpg["command"]))[1])
    hosts = INTERPOLATION.fullmatch(ragpg["environment"]["RAGPG_SERVER__ALLOWED_HOSTS"])
    assert hosts and hosts["name"] == "RAGPG_ALLOWED_HOSTS" and hosts["op"] == ":-"
    default = json.loads(hosts["arg"])
    allowed = ServerSettings(allowed_hosts=default).allowed_hosts  # what the server parses from the env
    policy = HostPolicy.for_bind("0.0.0.0", port, allowed)
    health = re.search(r"http://([^/'\"]+)/healthz", ragpg["healthcheck"]["test"][-1])[1]
    for host in (health, f"ragpg:{port}", f"localhost:{port}"):
        assert policy.allows(host, "http"), host
    for host in (f"evil.example:{port}", f"0.0.0.0:{port}", "db:5432"):
        assert not policy.allows(host, "http"), host
