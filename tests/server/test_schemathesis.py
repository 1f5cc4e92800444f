"""Property-based fuzzing of the app's own OpenAPI (schemathesis, in-process ASGI, a valid key):
no generated request, valid or not, gets a 5xx. Bounded: at most 25 examples and a few seconds
per operation and mode, so every operation is exercised even on a slow machine."""

from __future__ import annotations

import time
from pathlib import Path

import psycopg
import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable

from rag.config import Settings
from rag.ingest.pipeline import index_vaults
from rag.store import keys as key_store
from rag.store.vaults import NewVault, add_vault
from ragpg_server.app import create_app

MAX_EXAMPLES_PER_OPERATION = 25
TIME_BUDGET_PER_OPERATION_S = 4


@pytest.fixture
def fuzz_target(make_runtime, conn: psycopg.Connection, settings: Settings, tmp_path: Path):
    root = tmp_path / "notes"
    (root / "sub").mkdir(parents=True)
    (root / "a.md").write_text("# Alpha\n\nApples and pears, public text.\n")
    (root / "sub" / "b.md").write_text("---\nconfidentiality: restricted\n---\n# Beta\n\nRestricted pears.\n")
    add_vault(conn, NewVault(name="notes", path=root))
    conn.commit()
    assert not index_vaults(settings).failed
    _, key = key_store.create_key(conn, "fuzz", vaults=["notes"], clearance="internal")
    # schemathesis calls the app as http://testserver; the server answers only the names it allows
    app = create_app(make_runtime(allowed_hosts=("testserver",)))
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    return app, schema, key


def fuzz(strategy, mode, check):
    """A hypothesis test over one operation's cases, stopping after its time budget."""
    until = time.monotonic() + TIME_BUDGET_PER_OPERATION_S

    @settings(max_examples=MAX_EXAMPLES_PER_OPERATION, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck), phases=[Phase.generate])
    @given(case=strategy)
    def run(case) -> None:
        if time.monotonic() < until:
            check(case, mode)

    return run


@pytest.mark.filterwarnings("ignore::hypothesis.errors.HypothesisDeprecationWarning")
def test_no_server_errors(fuzz_target) -> None:
    app, schema, key = fuzz_target
    headers = {"Authorization": f"Bearer {key}"}
    started = time.monotonic()
    seen: dict[int, int] = {}
    cases: dict[tuple[str, str], int] = {}
    failures: list[str] = []

    def check(case, mode) -> None:
        label = (f"{case.method} {case.path}", mode.value)
        cases[label] = cases.get(label, 0) + 1
        response = case.call(headers=headers)
        seen[response.status_code] = seen.get(response.status_code, 0) + 1
        if response.status_code >= 500:
            failures.append(f"{case.method} {case.formatted_path} body={case.body!r} -> "
                            f"{response.status_code} {response.text[:300]}")

    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 5
    for mode in (schemathesis.GenerationMode.POSITIVE, schemathesis.GenerationMode.NEGATIVE):
        for operation in operations:
            try:
                strategy = operation.as_strategy(generation_mode=mode)
            except Exception:  # e.g. no negative cases for an operation without inputs
                continue

            try:
                fuzz(strategy, mode, check)()
            except Unsatisfiable:  # no negative case exists for an operation without inputs
                assert mode is schemathesis.GenerationMode.NEGATIVE
    if (runner := app.state.ragpg.index_runner) is not None:
        assert runner.wait(30)  # background runs started by the fuzzer finish before the database goes
    print("status codes:", dict(sorted(seen.items())), f"in {time.monotonic() - started:.1f}s")
    assert not failures, "\n".join(failures[:10])
    # every operation got valid requests (positive mode)
    positive = {op for op, mode in cases if mode == schemathesis.GenerationMode.POSITIVE.value}
    assert positive == {f"{o.method.upper()} {o.path}" for o in operations}, (positive, cases)
    assert sum(seen.values()) >= 20, seen
    assert any(400 <= s < 500 for s in seen) and any(200 <= s < 300 for s in seen), seen
