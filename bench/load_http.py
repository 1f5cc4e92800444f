"""HTTP load: many concurrent clients against a real `ragpg serve` on 127.0.0.1.

    python bench/load_http.py [--clients 200] [--seconds 20] [--endpoint context|search|ask|chunk|healthz]
                              [--notes 300] [--concurrency 8] [--queue-size 64] [--workers 1]
                              [--embedding hash] [--honor-retry-after] [--timeout 30] [--warmup 2]
                              [--compare-inprocess] [--rounds 3] [--out FILE.json]

Starts a throwaway embedded PostgreSQL in a temporary directory (or uses DATABASE_URL when set,
creating and dropping a scratch database there), indexes a synthetic notes vault, creates an API
key, starts `ragpg serve` bound to 127.0.0.1 only, and runs `--clients` concurrent clients (one
keep-alive HTTP/1.1 connection each, a minimal asyncio client so the generator stays cheaper than
the server) for `--seconds`. Prints throughput, latency p50/p95/p99 (all responses, 2xx only and 429
only) and the status-code histogram. A script, not a test: numbers depend on the machine.

Bounded time: clients stop sending at `--seconds`; a request still in flight then may take at most
`--timeout` seconds more (each request's own timeout), so the run ends by seconds + timeout.
Throughput counts the requests completed inside the `--seconds` window; requests that time out
are counted as `timeout` and other transport failures by exception name, never silently.
Prints a warning (and the first error line of the server log) on any 5xx or transport failure.

429s are the admission queue doing its job (bounded queue, immediate refusal with Retry-After);
by default clients retry at once, `--honor-retry-after` makes them wait as a polite client would.

`--compare-inprocess` (endpoint context): does HTTP keep up with the library? Each of `--rounds`
rounds measures the served /v1/context rate (2xx/s) and, in this process against the same database,
the rate of a loop of `rag.compute_context` run by `--concurrency` threads through one Runtime (the
server's concurrency and pool size) with the same questions, budget and scope (the API key's), each
over `--seconds` after `--warmup` seconds that are not counted; the two alternate which goes first.
Prints both rates, their ratio (target: HTTP ≥ 80 % of in-process) and the medians over the rounds;
`--out` writes every figure as JSON. Use a client count that keeps the server busy without 429s
(e.g. `--clients 16`: twice the concurrency, inside the queue).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from contextlib import ExitStack
from pathlib import Path

import httpx
import psycopg
from psycopg import sql

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from load_http_client import Result, load, request_for  # noqa: E402

WORDS = (
    "postgres index vector search query chunk document vault note markdown heading embedding "
    "similarity cosine hybrid keyword ranking fusion retrieval answer citation model token batch "
    "garden tomato recipe travel budget meeting release review design roadmap invoice contract "
    "the a of to and in is for with on that by this as are be it from or at which we can use when"
).split()
TARGET_RATIO = 0.8  # the target: HTTP serves at least 80 % of the library's in-process rate


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_notes(root: Path, count: int, seed: int = 11) -> None:
    rng = random.Random(seed)
    for i in range(count):
        folder = root / rng.choice(["projects", "journal", "reference", "meetings"])
        folder.mkdir(parents=True, exist_ok=True)
        sections = []
        for h in range(rng.randint(2, 4)):
            body = " ".join(rng.choice(WORDS) for _ in range(rng.randint(40, 120)))
            sections.append(f"## Section {h} {rng.choice(WORDS)}\n\n{body.capitalize()}.\n")
        (folder / f"note-{i:04d}.md").write_text(f"# Note {i} {rng.choice(WORDS)}\n\n" + "\n".join(sections))


def prepare_database(stack: ExitStack, tmp: Path) -> str:
    """A migrated scratch database: inside DATABASE_URL's server, or a temporary embedded server."""
    from rag.store import migrate
    from rag.store.embedded import EmbeddedServer

    external = os.environ.get("DATABASE_URL")
    if external:
        name = f"ragpg_bench_{uuid.uuid4().hex[:10]}"
        with psycopg.connect(external, autocommit=True) as conn:
            conn.execute(sql.SQL("create database {}").format(sql.Identifier(name)))

        def drop() -> None:
            with psycopg.connect(external, autocommit=True) as conn:
                conn.execute(sql.SQL("drop database if exists {} with (force)").format(sql.Identifier(name)))

        stack.callback(drop)
        from tests.support.pg import with_database

        url = with_database(external, name)
    else:
        server = EmbeddedServer(tmp / "pg")
        status = server.start()
        stack.callback(server.stop)
        assert status.url
        url = status.url
    migrate.upgrade(url)
    return url


def seed(url: str, tmp: Path, notes: int, embedding: str) -> tuple[str, str]:
    """Index a synthetic vault; returns (API key, one chunk path for --endpoint chunk)."""
    from rag.config import load_settings
    from rag.ingest.pipeline import index_vaults
    from rag.store import keys as key_store
    from rag.store.vaults import NewVault, add_vault

    root = tmp / "vault"
    write_notes(root, notes)
    settings = load_settings(tmp / "none.toml", database_url=url, data_dir=tmp / "data",
                             embedding={"model": embedding})
    with psycopg.connect(url, autocommit=True) as conn:
        add_vault(conn, NewVault(name="bench", path=root))
        _, key = key_store.create_key(conn, "bench", vaults=["bench"], clearance="internal")
    started = time.perf_counter()
    report = index_vaults(settings)
    if report.failed:
        raise SystemExit(f"indexing failed: {report.to_dict()}")
    print(f"indexed {report.total('files_indexed')} notes, {report.total('chunks_written')} chunks "
          f"in {time.perf_counter() - started:.1f}s ({embedding} embeddings)", file=sys.stderr)
    first = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.md"))[0]
    return key, f"/v1/chunks/bench/{first}/0"


def start_server(url: str, tmp: Path, port: int, args: argparse.Namespace) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGPG_") and k != "DATABASE_URL"}
    env.update({"DATABASE_URL": url, "RAGPG_CONFIG": str(tmp / "none.toml"), "RAGPG_DATA_DIR": str(tmp / "data"),
                "RAGPG_EMBEDDING__MODEL": args.embedding, "RAGPG_SERVER__CONCURRENCY": str(args.concurrency),
                "RAGPG_SERVER__QUEUE_SIZE": str(args.queue_size), "LANGFUSE_TRACING_ENABLED": "false"})
    log = (tmp / "server.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "ragpg_cli.main", "serve", "--host", "127.0.0.1", "--port", str(port),
         "--workers", str(args.workers), "--log-level", "warning"],
        cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"ragpg serve exited:\n{(tmp / 'server.log').read_text()}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200:
                return proc
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    proc.kill()
    raise SystemExit("ragpg serve did not become healthy in 60 s")


def pct(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def report(results: list[Result], elapsed: float, args: argparse.Namespace) -> None:
    statuses = Counter(s for s, _, _ in results)
    window = [(s, t) for s, t, inside in results if inside]
    ok_window = [t for s, t in window if isinstance(s, int) and 200 <= s < 300]
    print(f"\n{args.clients} clients for {args.seconds:.0f}s after {args.warmup:.0f}s of warm-up (run ended after "
          f"{elapsed:.1f}s), endpoint "
          f"{args.endpoint}, server concurrency {args.concurrency} + queue {args.queue_size} x {args.workers} "
          f"worker(s), {'honoring' if args.honor_retry_after else 'ignoring'} Retry-After")
    print(f"requests: {len(results)} ({len(window)} completed in the window)  throughput: "
          f"{len(window) / args.seconds:.1f} req/s  (2xx: {len(ok_window) / args.seconds:.1f} req/s)")
    groups = (("all", [t for _, t, _ in results]),
              ("2xx", [t for s, t, _ in results if isinstance(s, int) and 200 <= s < 300]),
              ("429", [t for s, t, _ in results if s == 429]))
    for label, values in groups:
        if values:
            print(f"latency {label:>3} ms: p50 {pct(values, 50) * 1000:.1f}  p95 {pct(values, 95) * 1000:.1f}  "
                  f"p99 {pct(values, 99) * 1000:.1f}  max {max(values) * 1000:.1f}  (n={len(values)})")
    print("status codes: " + ", ".join(f"{s}: {n}" for s, n in sorted(statuses.items(), key=lambda kv: str(kv[0]))))
    if any(not isinstance(s, int) or s >= 500 for s in statuses):
        print("WARNING: server errors or transport failures seen", file=sys.stderr)


def served_rate(results: list[Result], seconds: float) -> float:
    return sum(1 for st, _, inside in results if inside and isinstance(st, int) and 200 <= st < 300) / seconds


def inprocess(url: str, tmp: Path, key: str, args: argparse.Namespace) -> dict:
    """The library's own rate: `--concurrency` threads calling rag.compute_context through one Runtime,
    as the server's request threads do, with the same questions, budget and scope as the clients."""
    import threading

    from rag.compute import compute_context
    from rag.config import load_settings
    from rag.runtime import Runtime
    from rag.store import keys as key_store
    from ragpg_server.app import pool_size_for

    settings = load_settings(tmp / "none.toml", database_url=url, data_dir=tmp / "data",
                             embedding={"model": args.embedding})
    with psycopg.connect(url) as conn:
        found = key_store.find_key(conn, key)
    assert found is not None
    scope = found.scope
    rt = Runtime.from_settings(settings, pool_max_size=pool_size_for(args.concurrency))
    done: list[tuple[float, float]] = []  # (finished at, seconds)
    errors: Counter[str] = Counter()
    started = time.monotonic()
    window_start = started + args.warmup
    deadline = window_start + args.seconds

    def worker(i: int) -> None:
        rng = random.Random(i)
        while time.monotonic() < deadline:
            _, _, body = request_for("context", rng, "")
            assert body is not None
            t0 = time.perf_counter()
            try:
                compute_context(body["query"], budget_tokens=body["budget_tokens"], runtime=rt, scope=scope)
            except Exception as exc:  # counted, never silently
                errors[type(exc).__name__] += 1
                continue
            done.append((time.monotonic(), time.perf_counter() - t0))

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(args.concurrency)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        rt.close()
    inside = [sec for at, sec in done if window_start <= at <= deadline]
    return {"rate": len(inside) / args.seconds, "p50_ms": pct(inside, 50) * 1000, "p95_ms": pct(inside, 95) * 1000,
            "completed": len(done), "errors": dict(errors)}


def compare(base: str, url: str, tmp: Path, key: str, chunk_path: str, args: argparse.Namespace) -> dict:
    rounds = []
    for i in range(args.rounds):
        order = ("http", "inprocess") if i % 2 == 0 else ("inprocess", "http")
        row: dict = {"order": list(order)}
        for what in order:
            if what == "http":
                results, _ = asyncio.run(load(base, key, args, chunk_path))
                ok = [t for st, t, inside in results if inside and isinstance(st, int) and 200 <= st < 300]
                row["http"] = {"rate": served_rate(results, args.seconds), "p50_ms": pct(ok, 50) * 1000,
                               "p95_ms": pct(ok, 95) * 1000,
                               "statuses": {str(k): v for k, v in Counter(st for st, _, _ in results).items()}}
            else:
                row["inprocess"] = inprocess(url, tmp, key, args)
        row["ratio"] = row["http"]["rate"] / row["inprocess"]["rate"] if row["inprocess"]["rate"] else float("nan")
        print(f"round {i + 1}: HTTP {row['http']['rate']:.1f} req/s (p50 {row['http']['p50_ms']:.1f} ms), in-process "
              f"{row['inprocess']['rate']:.1f} calls/s (p50 {row['inprocess']['p50_ms']:.1f} ms), ratio "
              f"{row['ratio']:.2f}  statuses {row['http']['statuses']}", flush=True)
        rounds.append(row)
    med = {"http_rate": statistics.median(r["http"]["rate"] for r in rounds),
           "inprocess_rate": statistics.median(r["inprocess"]["rate"] for r in rounds),
           "ratio": statistics.median(r["ratio"] for r in rounds)}
    print(f"median of {len(rounds)} rounds: HTTP {med['http_rate']:.1f} req/s, in-process "
          f"{med['inprocess_rate']:.1f} calls/s, ratio {med['ratio']:.2f} (target ≥ {TARGET_RATIO:.2f}: "
          f"{'met' if med['ratio'] >= TARGET_RATIO else 'NOT met'})")
    return {"median": med, "target_ratio": TARGET_RATIO, "rounds": rounds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--endpoint", choices=["context", "search", "ask", "chunk", "healthz"], default="context")
    parser.add_argument("--notes", type=int, default=300)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--queue-size", type=int, default=64)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--embedding", default="hash", help="embedding model for index and queries (default hash)")
    parser.add_argument("--honor-retry-after", action="store_true")
    parser.add_argument("--timeout", type=float, default=30.0,
                        help="per-request timeout in seconds; bounds the run to --seconds + --timeout")
    parser.add_argument("--warmup", type=float, default=2.0, help="seconds before the counted window")
    parser.add_argument("--compare-inprocess", action="store_true",
                        help="also measure compute_context in process at the same concurrency (endpoint context)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of the comparison (medians reported)")
    parser.add_argument("--out", type=Path, help="write the figures as JSON here")
    args = parser.parse_args()
    if args.compare_inprocess and args.endpoint != "context":
        parser.error("--compare-inprocess compares /v1/context with compute_context: use --endpoint context")
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

    tmp = Path(tempfile.mkdtemp(prefix="ragpg-bench-"))
    with ExitStack() as stack:
        stack.callback(shutil.rmtree, tmp, ignore_errors=True)
        url = prepare_database(stack, tmp)
        key, chunk_path = seed(url, tmp, args.notes, args.embedding)
        port = free_port()
        proc = start_server(url, tmp, port, args)

        def stop() -> None:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()

        stack.callback(stop)
        payload: dict = {"command": " ".join(["python", "bench/load_http.py", *sys.argv[1:]]),
                         "args": vars(args) | {"out": str(args.out) if args.out else None},
                         "date": time.strftime("%Y-%m-%d %H:%M:%S"), "cpus": os.cpu_count()}
        if args.compare_inprocess:
            payload |= compare(f"http://127.0.0.1:{port}", url, tmp, key, chunk_path, args)
        else:
            results, elapsed = asyncio.run(load(f"http://127.0.0.1:{port}", key, args, chunk_path))
            report(results, elapsed, args)
            payload["served_per_s"] = served_rate(results, args.seconds)
        payload["load_average_after"] = os.getloadavg()
        if args.out:
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps(payload, indent=2, default=str) + "\n", encoding="utf-8")
            print(f"wrote {args.out}")
        problems = [line for line in (tmp / "server.log").read_text(errors="replace").splitlines()
                    if "ERROR" in line or "Traceback" in line]
        if problems:
            print(f"server log: {len(problems)} error line(s), first: {problems[0][:300]}", file=sys.stderr)


if __name__ == "__main__":
    main()
