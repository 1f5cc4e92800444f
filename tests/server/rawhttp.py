"""HTTP spoken byte by byte over a socket, so a test chooses every header (Host included) and can
send slowly: what an attacker's client does and a well-behaved library will not."""

from __future__ import annotations

import json
import socket
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class RawResponse:
    status: int
    headers: dict[str, str]  # lower-cased names; the last value wins
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def request_bytes(method: str, path: str, headers: dict[str, str] | None = None, body: bytes = b"",
                  version: str = "1.1") -> bytes:
    lines = [f"{method} {path} HTTP/{version}"]
    lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
    if body:
        lines.append(f"Content-Length: {len(body)}")
    lines.append("Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def parse(data: bytes) -> RawResponse:
    head, _, body = data.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return RawResponse(int(status_line.split()[1]), headers, body)


def read_all(sock: socket.socket) -> bytes:
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return data


def send(port: int, method: str, path: str, headers: dict[str, str] | None = None, body: bytes = b"",
         version: str = "1.1", timeout_s: float = 10) -> RawResponse:
    with socket.create_connection(("127.0.0.1", port), timeout=timeout_s) as sock:
        sock.sendall(request_bytes(method, path, headers, body, version))
        return parse(read_all(sock))
