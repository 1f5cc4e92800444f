"""A language model that trickles its reply (issue 47): does `ragpg serve` keep answering, and does
`ask` keep to `llm.deadline_s`?

    python bench/llm_slow_endpoint.py [--in-flight 10] [--trickle-s 2] [--deadline-s 20] [--samples 40]
                                      [--notes 60] [--concurrency 8] [--llm-concurrency 4] [--out FILE.json]

Starts a throwaway embedded PostgreSQL (or a scratch database in DATABASE_URL's server), indexes a
synthetic vault (hash embeddings), starts an OpenAI-compatible stub on loopback that sends each chat
completion one byte every `--trickle-s` seconds (tests/support/llm_stub.py), and `ragpg serve` with
that stub as its model. Then:

1. `/v1/vaults` and `/healthz` latency, `--samples` requests one after another, while `--in-flight`
   `/v1/ask` requests wait on the stub (only samples taken while at least one ask is in flight count);
2. each of those asks' wall time, beside `llm.deadline_s` (they run `server.llm_concurrency` at a
   time, so later ones also queued);
3. the same latencies idle, once the asks are over (the server warm), then one ask alone.

Target: `/v1/vaults` p50 with the asks in flight within 2x its idle p50; an ask alone within the
deadline plus a second or two. A script, not a test: the figures depend on the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from load_http import free_port, prepare_database, seed  # noqa: E402

from tests.support.llm_stub import LLMStub  # noqa: E402

QUESTION = "what is the roadmap for the garden budget review?"
TARGET_RATIO = 2.0  # /v1/vaults p50 with the asks in flight, at most this times its idle p50


def start_server(url: str, tmp: Path, port: int, stub: LLMStub, args: argparse.Namespace) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGPG_") and k != "DATABASE_URL"}
    env.update({"DATABASE_URL": url, "RAGPG_CONFIG": str(tmp / "none.toml"), "RAGPG_DATA_DIR": str(tmp / "data"),
                "RAGPG_EMBEDDING__MODEL": "hash", "RAGPG_SERVER__CONCURRENCY": str(args.concurrency),
                "RAGPG_SERVER__LLM_CONCURRENCY": str(args.llm_concurrency),
                "RAGPG_LLM__MODEL": "openai/stub", "RAGPG_LLM__API_BASE": f"{stub.url}/v1",
                "RAGPG_LLM__API_KEY": "sk-bench", "RAGPG_LLM__DEADLINE_S": str(args.deadline_s),
                "LANGFUSE_TRACING_ENABLED": "false", "LITELLM_LOCAL_MODEL_COST_MAP": "True"})
    log = (tmp / "server.log").open("wb")
    proc = subprocess.Popen([sys.executable, "-m", "ragpg_cli.main", "serve", "--host", "127.0.0.1", "--port",
                             str(port), "--log-level", "warning"],
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


def sample(client: httpx.Client, path: str, key: str, count: int, while_: Any = None) -> list[float]:
    """Milliseconds of `count` requests one after another (only those made while `while_()` holds)."""
    out = []
    for _ in range(count):
        if while_ is not None and not while_():
            break
        started = time.perf_counter()
        status = client.get(path, headers={"Authorization": f"Bearer {key}"}).status_code
        took = (time.perf_counter() - started) * 1000
        if status != 200:
            raise SystemExit(f"{path} answered {status}")
        if while_ is None or while_():
            out.append(took)
    return out


def p50(values: list[float]) -> float | None:
    return round(statistics.median(values), 2) if values else None


def timed_ask(base: str, key: str, out: list[dict[str, Any]]) -> None:
    with httpx.Client(base_url=base, timeout=600) as client:
        started = time.perf_counter()
        r = client.post("/v1/ask", headers={"Authorization": f"Bearer {key}"},
                        json={"query": QUESTION, "debug": True})
        body = r.json()
        out.append({"s": round(time.perf_counter() - started, 2), "status": r.status_code,
                    "answered_by": body.get("answered_by"),
                    "llm_deadline_said": "llm deadline" in json.dumps(body.get("debug"))})


def measure(base: str, key: str, stub: LLMStub, args: argparse.Namespace) -> dict[str, Any]:
    with httpx.Client(base_url=base, timeout=120) as client:
        sample(client, "/v1/vaults", key, 5)  # warm-up
        asks: list[dict[str, Any]] = []
        threads = [threading.Thread(target=timed_ask, args=(base, key, asks), daemon=True)
                   for _ in range(args.in_flight)]
        for t in threads:
            t.start()
        while stub.trickling == 0 and any(t.is_alive() for t in threads):
            time.sleep(0.05)
        in_flight = lambda: any(t.is_alive() for t in threads)  # noqa: E731
        busy = {p: sample(client, p, key, args.samples, in_flight) for p in ("/v1/vaults", "/healthz")}
        for t in threads:
            t.join()
        # idle after the asks: the server is warm then (litellm imported at its start, in the background)
        idle = {p: sample(client, p, key, args.samples) for p in ("/v1/vaults", "/healthz")}
        alone: list[dict[str, Any]] = []
        timed_ask(base, key, alone)
    ratio = (p50(busy["/v1/vaults"]) or 0) / (p50(idle["/v1/vaults"]) or 1)
    return {"idle_p50_ms": {p: p50(v) for p, v in idle.items()},
            "busy_p50_ms": {p: p50(v) for p, v in busy.items()},
            "busy_samples": {p: len(v) for p, v in busy.items()},
            "vaults_busy_over_idle": round(ratio, 2), "target_ratio": TARGET_RATIO,
            "ask_alone": alone[0], "asks_in_flight_s": sorted(a["s"] for a in asks),
            "asks_status": sorted({a["status"] for a in asks}),
            "asks_llm_deadline_said": sum(a["llm_deadline_said"] for a in asks)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--in-flight", type=int, default=10)
    ap.add_argument("--trickle-s", type=float, default=2.0)
    ap.add_argument("--deadline-s", type=float, default=20.0)
    ap.add_argument("--samples", type=int, default=40)
    ap.add_argument("--notes", type=int, default=60)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--llm-concurrency", type=int, default=4)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="ragpg-bench-llm-")))
        url = prepare_database(stack, tmp)
        key, _ = seed(url, tmp, args.notes, "hash")
        stub = stack.enter_context(LLMStub(default_reply="The roadmap is reviewed in spring [1]."))
        stub.trickle_s = args.trickle_s
        port = free_port()
        proc = start_server(url, tmp, port, stub, args)
        stack.callback(lambda: (proc.terminate(), proc.wait(timeout=30)))
        result = measure(f"http://127.0.0.1:{port}", key, stub, args)
    result["settings"] = {k: getattr(args, k) for k in ("in_flight", "trickle_s", "deadline_s", "concurrency",
                                                        "llm_concurrency", "samples", "notes")}
    result["machine"] = {"cpus": os.cpu_count(), "loadavg": [round(x, 2) for x in os.getloadavg()]}
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
