"""Session memory and parallelism for the index builds that follow a bulk load.

pgvector builds an HNSW index in memory while the graph fits in `maintenance_work_mem` and then
falls back to inserting into the on-disk index, several times slower: at the default 64 MB, a
200k-vector build took ~400 s and wrote enough WAL to trigger 28 "checkpoints are occurring too
frequently". So before a build the session's `maintenance_work_mem` is raised to what the graph
needs, bounded by a share of the memory the machine has available, and
`max_parallel_maintenance_workers` to the cores beyond the first (the leader builds too). The same
budget serves `work_mem` for the BM25 pass (one big sort and hash aggregate). Session-level SET:
nothing outside this connection changes, and `reset` puts the server's values back.

Only when the server runs on this machine (a Unix socket or a loopback address): the client's
memory and cores say nothing about a remote server, whose own settings then stay.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import psutil
from psycopg import sql
from psycopg.pq import TransactionStatus

from rag.config import IngestSettings
from rag.store.database import Connection

# Bytes of maintenance_work_mem per element of an in-memory HNSW graph beyond the vector itself
# (4 bytes a dimension + an 8-byte header): neighbour lists (2*m candidates of 16 bytes on layer 0,
# m on the few upper layers), the element and allocation headers. pgvector 0.8.6, m = 16 (ragpg's
# index): a 384-dim build at 1 MB reported "no longer fits" after 466 tuples = 2,250 bytes each.
HNSW_ELEMENT_OVERHEAD_BYTES = 720
HNSW_HEADROOM = 1.1
_MB = 1024 * 1024


@dataclass(frozen=True)
class BuildMemory:
    """What a build session sets; None leaves the server's value."""

    maintenance_work_mem_mb: int | None
    work_mem_mb: int | None
    parallel_workers: int | None
    needed_mb: int  # what the HNSW graph would take
    local: bool

    def to_dict(self) -> dict[str, int | bool | None]:
        return {"maintenance_work_mem_mb": self.maintenance_work_mem_mb, "work_mem_mb": self.work_mem_mb,
                "parallel_workers": self.parallel_workers, "hnsw_graph_mb": self.needed_mb, "local": self.local}


def server_is_local(conn: Connection) -> bool:
    host = conn.info.host
    if not host or host.startswith("/") or host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def hnsw_graph_mb(vectors: int, dims: int) -> int:
    per_element = 4 * dims + 8 + HNSW_ELEMENT_OVERHEAD_BYTES
    return int(vectors * per_element * HNSW_HEADROOM / _MB) + 1


def plan(conn: Connection, settings: IngestSettings, vectors: int, dims: int) -> BuildMemory:
    """The session settings for building indexes over `vectors` vectors of `dims` dimensions."""
    needed = hnsw_graph_mb(vectors, dims)
    local = server_is_local(conn)
    workers = settings.build_parallel_workers
    if not local:
        return BuildMemory(None, None, workers, needed, local)
    budget = min(int(psutil.virtual_memory().available * settings.build_memory_fraction / _MB),
                 settings.build_memory_max_mb)
    current = _setting_mb(conn, "maintenance_work_mem")
    # Never below what the server already grants; never above the budget (a build that does not fit
    # still finishes, on disk, slower).
    mwm = max(current, min(needed, budget))
    if workers is None:
        workers = max(0, (os.cpu_count() or 1) - 1)
    return BuildMemory(mwm, max(_setting_mb(conn, "work_mem"), budget), workers, needed, local)


def _setting_mb(conn: Connection, name: str) -> int:
    row = conn.execute("select setting::bigint * pg_size_bytes('1' || coalesce(unit, 'B'))::bigint / %s as mb "
                       "from pg_settings where name = %s", (_MB, name)).fetchone()
    return int(row["mb"]) if row else 0


@contextmanager
def build_session(conn: Connection, memory: BuildMemory) -> Iterator[None]:
    """Set `memory` on the session for the body, then put the server's values back."""
    changes = [("maintenance_work_mem", f"{memory.maintenance_work_mem_mb}MB" if memory.maintenance_work_mem_mb else None),
               ("work_mem", f"{memory.work_mem_mb}MB" if memory.work_mem_mb else None),
               ("max_parallel_maintenance_workers",
                str(memory.parallel_workers) if memory.parallel_workers is not None else None)]
    applied = [name for name, value in changes if value is not None]
    for name, value in changes:
        if value is not None:
            conn.execute(sql.SQL("select set_config({}, {}, false)").format(sql.Literal(name), sql.Literal(value)))
    try:
        yield
    finally:
        # In a failed transaction the rollback undoes the settings anyway (and reset would fail).
        if not conn.closed and conn.info.transaction_status != TransactionStatus.INERROR:
            for name in applied:
                conn.execute(sql.SQL("reset {}").format(sql.Identifier(name)))
