"""The load generator of bench/load_http.py: simulated users, each a tiny keep-alive HTTP/1.1
client, sending one endpoint's requests until the window closes."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import random
import time

QUERIES = ["how do I tune hybrid retrieval ranking", "tomato garden watering schedule", "release review notes",
           "budget for the travel meeting", "vector index embedding model", "what did the design review decide"]


def request_for(endpoint: str, rng: random.Random, chunk_path: str) -> tuple[str, str, dict | None]:
    query = rng.choice(QUERIES)
    return {
        "context": ("POST", "/v1/context", {"query": query, "budget_tokens": 1500}),
        "search": ("POST", "/v1/search", {"query": query, "k": 10}),
        "ask": ("POST", "/v1/ask", {"query": query}),
        "chunk": ("GET", chunk_path, None),
        "healthz": ("GET", "/healthz", None),
    }[endpoint]


# (status or transport-failure name, seconds, finished inside the --seconds window)
Result = tuple[int | str, float, bool]


class Connection:
    """A minimal keep-alive HTTP/1.1 client over one asyncio stream (one per simulated user).

    Deliberately tiny: with 200 users a general-purpose client's per-request CPU (one shared httpx
    pool, or 200 httpx clients) exceeds the server's on a small machine, and the run would measure
    the load generator instead of the server.
    """

    def __init__(self, host: str, port: int, key: str) -> None:
        self.host, self.port = host, port
        self.auth = f"Authorization: Bearer {key}\r\n"
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            with contextlib.suppress(Exception):
                await self.writer.wait_closed()
        self.reader = self.writer = None

    async def request(self, method: str, path: str, body: dict | None) -> tuple[int, dict[str, str]]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        assert self.reader is not None
        payload = json.dumps(body).encode() if body is not None else b""
        head = (f"{method} {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n{self.auth}"
                + (f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n" if body is not None
                   else "") + "\r\n")
        self.writer.write(head.encode() + payload)
        await self.writer.drain()
        lines = (await self.reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:] if line)}
        if headers.get("transfer-encoding", "").lower() == "chunked":
            while size := int((await self.reader.readuntil(b"\r\n")).split(b";")[0], 16):
                await self.reader.readexactly(size + 2)
            await self.reader.readuntil(b"\r\n")
        else:
            await self.reader.readexactly(int(headers.get("content-length", "0")))
        if headers.get("connection", "").lower() == "close":
            await self.close()
        return status, headers


async def load(base: str, key: str, args: argparse.Namespace, chunk_path: str) -> tuple[list[Result], float]:
    results: list[Result] = []
    host, _, port = base.removeprefix("http://").partition(":")
    started = time.monotonic()
    window_start = started + args.warmup  # requests finished before this are warm-up, not counted
    deadline = window_start + args.seconds

    async def worker(i: int) -> None:
        rng = random.Random(i)
        conn = Connection(host, int(port), key)
        try:
            while time.monotonic() < deadline:
                method, path, body = request_for(args.endpoint, rng, chunk_path)
                t0 = time.perf_counter()
                headers: dict[str, str] = {}
                try:
                    status, headers = await asyncio.wait_for(conn.request(method, path, body), args.timeout)
                except TimeoutError:
                    status = "timeout"
                    await conn.close()
                except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError) as exc:
                    status = type(exc).__name__
                    await conn.close()
                done = time.monotonic()
                results.append((status, time.perf_counter() - t0, window_start <= done <= deadline))
                if status == 429 and args.honor_retry_after:
                    await asyncio.sleep(min(float(headers.get("retry-after", "1")),
                                            max(0.0, deadline - time.monotonic())))
        finally:
            await conn.close()

    await asyncio.gather(*(worker(i) for i in range(args.clients)))
    return results, time.monotonic() - started


