"""A local OpenAI-compatible server for tests: embeddings and chat completions on 127.0.0.1.

    with LLMStub(dims=8, responses=["first answer"]) as stub:
        litellm.completion(model="openai/stub", api_base=stub.url + "/v1", api_key="sk-test", ...)
        assert stub.requests[0]["messages"][0]["content"] == ...

Behaviours are plain attributes, changeable while it runs: ``delay_s`` (sleep before answering),
``fail_status`` (answer every request with that HTTP status; ``fail_count`` limits it to the next
N requests), ``malformed`` (a 200 whose body is not JSON), ``trickle_s`` (send a chat completion's
headers at once, then its body one byte every ``trickle_s`` seconds: a slow endpoint that a per-read
timeout never catches). ``requests`` is the list of received JSON bodies, ``received`` the same with
path and headers; ``trickling`` counts the responses being trickled right now, ``trickle_dropped``
those the client hung up on before the last byte.
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np

Responder = Callable[[list[dict[str, Any]]], "str | dict[str, Any]"]


def stub_vector(text: str, dims: int) -> list[float]:
    """The deterministic (not normalised) vector the stub returns for ``text``."""
    seed = int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "little")
    return [float(x) for x in np.random.default_rng(seed).standard_normal(dims).astype(np.float32)]


@dataclass(frozen=True)
class StubRequest:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass
class LLMStub:
    dims: int = 8
    responses: Iterable[str | dict[str, Any]] = ()
    responder: Responder | None = None
    delay_s: float = 0.0
    fail_status: int | None = None
    fail_count: int | None = None
    fail_message: str | None = None  # the failing answer's error message (default "stub failure <status>")
    malformed: bool = False
    trickle_s: float = 0.0
    default_reply: str = "stub reply"
    received: list[StubRequest] = field(default_factory=list, init=False)
    in_flight: int = field(default=0, init=False)  # requests being delayed right now
    trickling: int = field(default=0, init=False)
    trickle_dropped: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        self._queue: deque[str | dict[str, Any]] = deque(self.responses)
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> LLMStub:
        server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        server.daemon_threads = True
        server.block_on_close = False
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="llm-stub", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> LLMStub:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>`` (append ``/v1`` for an OpenAI ``api_base``)."""
        if self._server is None:
            raise RuntimeError("LLMStub is not running")
        return f"http://127.0.0.1:{self._server.server_port}"

    # -- scripting and inspection ----------------------------------------------------------
    def queue(self, *responses: str | dict[str, Any]) -> None:
        """Answer the next chat completions with these (a str is the content, a dict the message)."""
        with self._lock:
            self._queue.extend(responses)

    @property
    def requests(self) -> list[dict[str, Any]]:
        with self._lock:
            return [r.body for r in self.received]

    def requests_to(self, path_suffix: str) -> list[dict[str, Any]]:
        with self._lock:
            return [r.body for r in self.received if r.path.endswith(path_suffix)]

    # -- behaviour (called from handler threads) --------------------------------------------
    def _record(self, request: StubRequest) -> int | None:
        """Log the request; the HTTP status to fail it with, if any."""
        with self._lock:
            self.received.append(request)
            if self.fail_status is None:
                return None
            if self.fail_count is None:
                return self.fail_status
            if self.fail_count <= 0:
                return None
            self.fail_count -= 1
            return self.fail_status

    def _wait(self) -> None:
        if self.delay_s > 0:
            with self._lock:
                self.in_flight += 1
            try:
                self._stopping.wait(self.delay_s)
            finally:
                with self._lock:
                    self.in_flight -= 1

    def _reply_for(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        with self._lock:
            scripted = self._queue.popleft() if self._queue else None
        if scripted is None:
            scripted = self.responder(messages) if self.responder is not None else self.default_reply
        if isinstance(scripted, str):
            return {"role": "assistant", "content": scripted}
        return {"role": "assistant", "content": None, **scripted}

    def embeddings(self, body: dict[str, Any]) -> dict[str, Any]:
        inputs = body.get("input", [])
        texts: Sequence[Any] = [inputs] if isinstance(inputs, str) else inputs
        dims = int(body.get("dimensions") or self.dims)
        data = []
        for i, text in enumerate(texts):
            vector = stub_vector(str(text), dims)
            if body.get("encoding_format") == "base64":
                encoded: Any = base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode("ascii")
            else:
                encoded = vector
            data.append({"object": "embedding", "index": i, "embedding": encoded})
        tokens = sum(len(str(t).split()) for t in texts)
        return {"object": "list", "data": data, "model": body.get("model", "stub"),
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}

    def chat(self, body: dict[str, Any]) -> dict[str, Any]:
        message = self._reply_for(list(body.get("messages", [])))
        prompt_tokens = sum(len(str(m.get("content", "")).split()) for m in body.get("messages", []))
        completion_tokens = len(str(message.get("content") or "").split())
        return {
            "id": f"chatcmpl-stub-{len(self.received)}", "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model", "stub"),
            "choices": [{"index": 0, "message": message,
                         "finish_reason": "tool_calls" if message.get("tool_calls") else "stop"}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens},
        }


def _stream_chunks(completion: dict[str, Any]) -> list[dict[str, Any]]:
    """The completion as OpenAI ``chat.completion.chunk`` events: role, one per word, finish."""
    content = completion["choices"][0]["message"].get("content") or ""
    base = {"id": completion["id"], "object": "chat.completion.chunk", "created": completion["created"],
            "model": completion["model"]}
    pieces = [w + " " for w in content.split(" ")]
    if pieces:
        pieces[-1] = pieces[-1][:-1]
    deltas: list[dict[str, Any]] = [{"role": "assistant", "content": ""}] + [{"content": p} for p in pieces]
    chunks = [{**base, "choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas]
    chunks.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                   "usage": completion["usage"]})
    return chunks


def _handler_for(stub: LLMStub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            return

        def do_GET(self) -> None:
            if self.path.rstrip("/").endswith("/models"):
                self._send(200, {"object": "list", "data": [{"id": "stub", "object": "model"}]})
            else:
                self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw or b"{}")
            except json.JSONDecodeError:
                body = {"_raw": raw.decode("utf-8", "replace")}
            path = self.path.split("?", 1)[0].rstrip("/")
            status = stub._record(StubRequest(path, {k.lower(): v for k, v in self.headers.items()}, body))
            stub._wait()
            if status is not None:
                self._send(status, {"error": {"message": stub.fail_message or f"stub failure {status}", "type": "stub_error",
                                              "code": str(status)}})
                return
            if stub.malformed:
                self._send_raw(200, b'{"object": "list", "data": [ this is not json', "application/json")
                return
            if path.endswith("/embeddings"):
                self._send(200, stub.embeddings(body))
            elif path.endswith("/chat/completions"):
                completion = stub.chat(body)
                if body.get("stream"):
                    self._send_stream(_stream_chunks(completion))
                elif stub.trickle_s > 0:
                    self._send_trickle(json.dumps(completion).encode("utf-8"))
                else:
                    self._send(200, completion)
            else:
                self._send(404, {"error": {"message": f"no route {path}", "type": "not_found"}})

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            self._send_raw(status, json.dumps(payload).encode("utf-8"), "application/json")

        def _send_raw(self, status: int, data: bytes, content_type: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            if status == 429:
                self.send_header("Retry-After", "0")
            self.end_headers()
            try:
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout test)
                pass

        def _send_trickle(self, data: bytes) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.close_connection = True
            with stub._lock:
                stub.trickling += 1
            try:
                for i in range(len(data)):
                    self.wfile.write(data[i:i + 1])
                    self.wfile.flush()
                    if stub._stopping.wait(stub.trickle_s):
                        return
            except (BrokenPipeError, ConnectionResetError):  # the client hung up mid-trickle
                with stub._lock:
                    stub.trickle_dropped += 1
            finally:
                with stub._lock:
                    stub.trickling -= 1

        def _send_stream(self, chunks: list[dict[str, Any]]) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            try:
                for chunk in chunks:
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                pass

    return Handler
