"""Tenants for bench/scale.py (`--tenants N`): the corpus spread over N vaults of uneven sizes, loaded as
one bulk load, and searches scoped to one vault (issue 34); the vaults above ingest.own_partition_min_chunks
in partitions of their own, the rest in the shared one (issue 49).

Vault sizes follow Zipf's law (the vault of rank r holds a share proportional to 1/r): a few large
tenants and a long tail of small ones, as a hosted service or one person's many vaults look. Each
document goes to a vault drawn with those weights (seeded), so every vault mixes the corpus' folders,
tags and dates and the metadata filters keep their selectivity inside a vault.

Reported per vault size class (the vault closest to that share of the chunks): `vault_largest`,
`vault_1pct`, `vault_0_1pct`; and the metadata filters inside the largest vault
(`vault_largest+<filter>`), each like the other filtered entries: p50/p95, full-k fraction, recall@10
of the vector leg against the exact top-10 of the same rows (numpy) and of the hybrid against the same
call with an exact vector leg.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np
import psycopg
import scale_corpus as corpus_mod

from rag.config import IngestSettings
from rag.ingest import build_memory, bulk, store
from rag.store.models import EmbeddingModelRef
from rag.store.vaults import NewVault, add_vault

SHARES = {"vault_largest": None, "vault_1pct": 0.01, "vault_0_1pct": 0.001}
WITHIN = ("folder_10pct", "tag_10pct", "date_10pct", "folder_1pct", "tag_1pct", "date_1pct")


def vault_name(rank: int) -> str:
    return f"tenant{rank:04d}"


def assignment(n_docs: int, tenants: int, seed: int) -> np.ndarray:
    """Each document's vault rank (0 = the largest), drawn with Zipf weights 1/(r+1)."""
    weights = 1.0 / np.arange(1, tenants + 1)
    ranks = np.random.default_rng(seed).choice(tenants, size=n_docs, p=weights / weights.sum())
    # every vault gets at least one document: the first `tenants` documents go one to each
    ranks[:min(tenants, n_docs)] = np.arange(min(tenants, n_docs))
    return ranks.astype(np.int32)


def chunk_vaults(corpus: corpus_mod.Corpus, doc_vault: np.ndarray) -> np.ndarray:
    """Each chunk's vault rank, in load order."""
    counts = np.array([len(d["chunks"]) for d in corpus.documents()], dtype=np.int64)
    return np.repeat(doc_vault, counts)


def load(conn: psycopg.Connection, corpus: corpus_mod.Corpus, model: EmbeddingModelRef,
         docs: Iterable[store.PreparedDocument], doc_vault: np.ndarray, tenants: int, settings: IngestSettings
         ) -> dict[str, Any]:
    """One bulk load of every vault: indexes dropped once, COPY batches per vault, then BM25 per vault
    and each partition's indexes built once (ragpg_create_hnsw_index builds one graph per partition).
    Each vault is placed first, as rag.ingest.bulk.load_documents places it: one that the load takes past
    ingest.own_partition_min_chunks gets partitions of its own, the others share the default one."""
    vaults = [add_vault(conn, NewVault(vault_name(r), corpus.root)) for r in range(tenants)]
    sizes = np.bincount(chunk_vaults(corpus, doc_vault), minlength=tenants)
    own = [bulk.place_vault(conn, v.id, int(sizes[r]), settings) for r, v in enumerate(vaults)]
    seconds: dict[str, float] = {}
    started = time.perf_counter()
    for v in vaults:
        conn.execute("select ragpg_bm25_defer(%s)", (v.id,))
    conn.execute("select ragpg_drop_hnsw_index(%s)", (model.embedding_table,))
    conn.execute("select ragpg_drop_chunk_indexes()")
    pending: dict[int, list[store.PreparedDocument]] = {}
    for doc, rank in zip(docs, doc_vault, strict=True):
        batch = pending.setdefault(int(rank), [])
        batch.append(doc)
        if sum(len(d.chunks) for d in batch) >= settings.bulk_batch_rows:
            bulk.copy_batch(conn, vaults[int(rank)], model, batch)
            batch.clear()
    for rank, batch in pending.items():
        if batch:
            bulk.copy_batch(conn, vaults[rank], model, batch)
    seconds["copy"] = time.perf_counter() - started
    step = time.perf_counter()
    for v in vaults:
        conn.execute("select ragpg_bm25_restore(%s)", (v.id,))
    seconds["bm25"] = time.perf_counter() - step
    # memory for the largest graph built (the shared partition's, or the largest vault's), as a bulk
    # load plans it: a fixed 512 MB built the 575k-vector shared graph of 1M chunks over 1,000 vaults on
    # disk, far slower
    largest = max(int(sizes[[not o for o in own]].sum()), int(sizes[own].max()) if any(own) else 0)
    with build_memory.build_session(conn, build_memory.plan(conn, settings, largest, model.dims)):
        step = time.perf_counter()
        conn.execute("select ragpg_create_chunk_indexes()")
        seconds["chunk_indexes"] = time.perf_counter() - step
        step = time.perf_counter()
        conn.execute("select ragpg_create_hnsw_index(%s)", (model.embedding_table,))
        seconds["hnsw"] = time.perf_counter() - step
    seconds["total"] = time.perf_counter() - started
    return {"vaults": [{"name": v.name, "id": v.id} for v in vaults],
            "own_partition_min_chunks": settings.own_partition_min_chunks,
            "vaults_with_own_partitions": int(sum(own)),
            "seconds": {k: round(x, 2) for k, x in seconds.items()}}


def named(vault_rank: np.ndarray, tenants: int) -> dict[str, int]:
    """The vault rank standing for each size class: the largest, and the closest to each share."""
    sizes = np.bincount(vault_rank, minlength=tenants)
    out = {}
    for name, share in SHARES.items():
        out[name] = 0 if share is None else int(np.argmin(np.abs(sizes / sizes.sum() - share)))
    return out


def scopes(vault_rank: np.ndarray, tenants: int, masks: dict[str, np.ndarray], vault_ids: dict[str, int]
           ) -> Iterator[tuple[str, dict[str, Any], str, np.ndarray]]:
    """(name, filter, the bare SQL a pgvector user would write, mask) per scoped search measured."""
    classes = named(vault_rank, tenants)
    for name, rank in classes.items():
        yield name, {"vault": vault_name(rank)}, f"e.vault_id = {vault_ids[vault_name(rank)]}", vault_rank == rank
    largest = classes["vault_largest"]
    for f in WITHIN:
        yield (f"vault_largest+{f}", {"vault": vault_name(largest), **corpus_mod.FILTERS[f]},
               f"e.vault_id = {vault_ids[vault_name(largest)]} and {corpus_mod.BARE_FILTERS[f]}",
               (vault_rank == largest) & masks[f])


def size_summary(vault_rank: np.ndarray, tenants: int) -> dict[str, Any]:
    sizes = np.sort(np.bincount(vault_rank, minlength=tenants))[::-1]
    return {"tenants": tenants, "largest": int(sizes[0]), "median": int(np.median(sizes)), "smallest": int(sizes[-1]),
            "classes": {k: {"vault": vault_name(r), "chunks": int((vault_rank == r).sum())}
                        for k, r in named(vault_rank, tenants).items()}}
