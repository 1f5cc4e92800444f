"""Scale: bulk load, index builds and search latency/recall on synthetic corpora of 100k to 1M chunks.

    python bench/scale.py --sizes 100000            # ~3 min on 2 cores (1M: ~25 min, 15 GB under /tmp)
    nice -n 10 python bench/scale.py --sizes 1000000
    python bench/scale.py --sizes 10000 --queries 50 --filtered-queries 20 --context-queries 10   # quick
    python bench/scale.py --sizes 100000 --vectors model --ef-sweep 100,200,400   # MiniLM geometry

`--vectors hash` (default): the chunks' and queries' vectors from rag.embed.hash; `--vectors model`:
all-MiniLM-L6-v2's geometry (bench/scale_vectors.py: the mean of the model's vectors of a chunk's
source sentences, perturbed; queries embedded with the model), results in scale-<size>-model.json.

Per size (corpus: bench/scale_corpus.py, BEIR text recombined and perturbed, 384-dim hash vectors,
metadata filters at ~1% and ~10%), on a fresh database (a throwaway embedded server under /tmp
unless DATABASE_URL is set):

* load: `rag.ingest.bulk.load_documents` streaming the cached corpus (COPY batches, BM25 and index
  builds deferred to the end, build memory sized from the machine): chunks/s including every build,
  each phase's seconds, client peak RSS, server memory (sum of PSS) during the load;
* sizes of the HNSW index, the BM25 tables and the chunks' indexes;
* one query at a time after a warm-up: p50/p95 of `match_native_chunks_<model>` (vector),
  `match_lexical_chunks` (BM25), `match_hybrid_chunks_<model>` (RRF), each beside a bare pgvector
  `ORDER BY embedding <=> q LIMIT 10` (ef_search 40, pgvector's default) in the same run; HNSW
  recall@10 of both against an exact top-10 computed in numpy;
* filtered top-10 for each filter (folder $prefix, tag containment, date range at ~1% and ~10%):
  latency, whether the full k came back, vector recall against the exact filtered top-10 (numpy),
  hybrid overlap with the same hybrid call forced to an exact vector leg; beside a bare pgvector
  query with the plain SQL a user would write for that filter;
* `compute_context` (profile chat, mode base): p50 of the whole call and of its base pass;
* which lexical backend each vault used (`vaults.lexical_backend` when the schema has it).

Results: bench/results/scale-<size>[-model].json (`--out-dir`), a table on stdout. Query functions:
bench/scale_queries.py.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import numpy as np
import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LANGFUSE_TRACING_ENABLED", "false")

import scale_corpus as corpus_mod  # noqa: E402
import scale_tenants as tenants_mod  # noqa: E402
from scale_measure import (  # noqa: E402
    MemorySampler,
    client_peak_rss_mb,
    label,
    lexical_backends,
    machine,
    relation_sizes,
    table,
)
from scale_queries import VAULT, K, Searcher, context_pass, ef_sweep, filtered, passage_recall, unfiltered  # noqa: E402

from rag.config import load_settings  # noqa: E402
from rag.ingest import bulk, store  # noqa: E402
from rag.store import lexical_backend, migrate  # noqa: E402
from rag.store.database import open_connection  # noqa: E402
from rag.store.models import register_model  # noqa: E402
from rag.store.vaults import NewVault, add_vault  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


# -- setup --------------------------------------------------------------------------------------

def ensure_corpus(n: int, seed: int, vectors: str) -> corpus_mod.Corpus:
    """The cached corpus; generated in a child process so its memory never counts as the loader's."""
    if not (corpus_mod.corpus_dir(n, seed, vectors) / "meta.json").exists():
        print(f"generating a {n}-chunk corpus with {vectors} vectors (cached under {corpus_mod.CACHE}) ...",
              flush=True)
        subprocess.run([sys.executable, str(Path(__file__).with_name("scale_corpus.py")), str(n), str(seed),
                        vectors], check=True)
    return corpus_mod.generate(n, seed, vectors=vectors)


@contextmanager
def server(settings_overrides: list[str]) -> Iterator[tuple[str, int | None]]:
    """(admin URL, postmaster pid): DATABASE_URL's server, or a throwaway embedded one under /tmp
    with `NAME=VALUE` settings applied by ALTER SYSTEM and a restart."""
    if os.environ.get("DATABASE_URL"):
        yield os.environ["DATABASE_URL"], None
        return
    from rag.store.embedded import EmbeddedServer

    tmp = Path(tempfile.mkdtemp(prefix="ragpg-scale-", dir="/tmp"))
    srv = EmbeddedServer(tmp)
    try:
        status = srv.start()
        if settings_overrides:
            with psycopg.connect(status.url, autocommit=True) as c:
                for item in settings_overrides:
                    name, value = item.split("=", 1)
                    c.execute(sql.SQL("alter system set {} = {}").format(sql.Identifier(name), sql.Literal(value)))
            srv.stop()
            status = srv.start()
        assert status.url
        yield status.url, status.pid
    finally:
        srv.stop()
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)


def fresh_database(admin_url: str) -> str:
    name = f"ragpg_scale_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin_url, autocommit=True) as c:
        c.execute(sql.SQL("create database {}").format(sql.Identifier(name)))
    parts = urlsplit(admin_url)  # the same server, the new database (migrations need a URL)
    url = (urlunsplit(parts._replace(path=f"/{name}")) if parts.scheme in ("postgresql", "postgres")
           else make_conninfo(admin_url, dbname=name))
    migrate.upgrade(url)
    return url


def prepared(corpus: corpus_mod.Corpus, doc_vault: np.ndarray | None = None) -> Iterator[store.PreparedDocument]:
    """The corpus as the indexer's documents (metadata denormalised onto chunks the same way), one
    at a time, with their vectors read alongside (`doc_vault`: each document's tenant rank)."""
    blocks = corpus.vector_blocks(4096)
    pending = np.zeros((0, corpus_mod.DIMS), dtype=np.float32)
    for doc_no, d in enumerate(corpus.documents()):
        n = len(d["chunks"])
        while len(pending) < n:
            pending = np.concatenate([pending, next(blocks)[1]])
        vectors, pending = pending[:n], pending[n:]
        text = "\n".join(c[1] for c in d["chunks"])
        doc = store.PreparedDocument(
            source_path=d["source_path"], folder=d["folder"], title=d["title"], url=None, doc_type="note",
            persona=None, tags=d["tags"], project=None, confidentiality="public", doc_date=d["date"],
            document_version=hashlib.sha256(text.encode()).hexdigest(), size_bytes=len(text.encode()), metadata={})
        vault = VAULT if doc_vault is None else tenants_mod.vault_name(int(doc_vault[doc_no]))
        base = store.document_metadata(vault, doc)
        doc.chunks = [store.PreparedChunk(i, h, t, tokens, None, None, None, None, [], 0.0,
                                          {**base, "ordinal": i, "heading_path": h})
                      for i, (h, t, tokens) in enumerate(d["chunks"])]
        doc.vectors = vectors
        yield doc


# -- one size -----------------------------------------------------------------------------------

def run_size(n: int, args: argparse.Namespace) -> dict[str, Any]:
    corpus = ensure_corpus(n, args.seed, args.vectors)
    masks = corpus.masks()
    with server(args.server_setting) as (admin_url, server_pid):
        url = fresh_database(admin_url)
        conn = open_connection(url, autocommit=True)
        out: dict[str, Any] = {"size": corpus.n_chunks, "documents": corpus.n_docs, "machine": machine(conn)}
        model = (register_model(conn, "hash", f"feature-hash-{corpus_mod.DIMS}", corpus_mod.DIMS)
                 if args.vectors == "hash" else
                 register_model(conn, "local", corpus_mod.scale_vectors.MODEL, corpus_mod.DIMS))
        out["vectors"] = {"source": args.vectors, **json.loads((corpus.root / "meta.json").read_text())}
        settings = load_settings(Path("/nonexistent/ragpg-scale.toml"), database_url=url)
        if args.tenants:
            return run_tenants(n, args, corpus, masks, conn, model, url, server_pid, out, settings)
        vault = add_vault(conn, NewVault(VAULT, corpus.root))
        started = time.perf_counter()

        def progress(done: int) -> None:
            if done // 50_000 != (done - settings.ingest.bulk_batch_rows) // 50_000:
                print(f"  loaded {done}/{corpus.n_chunks} chunks ({done / (time.perf_counter() - started):.0f}/s)",
                      flush=True)

        print(f"[{label(n)}] loading {corpus.n_chunks} chunks ...", flush=True)
        with MemorySampler(server_pid) as mem:
            report = bulk.load_documents(conn, vault, model, prepared(corpus), settings.ingest,
                                         expected_chunks=corpus.n_chunks, on_batch=progress)
        out["load"] = {**report.to_dict(), "client_peak_rss_mb": round(client_peak_rss_mb(), 1),
                       "memory_peaks": mem.peaks()}
        print(f"  {report.chunks_per_s:.0f} chunks/s including builds; seconds {out['load']['seconds']}", flush=True)
        # Embedded after the load: the local model's session would otherwise count in the loader's peak RSS.
        texts, qvecs = corpus_mod.queries(args.queries + args.warmup, args.seed, vectors=args.vectors)
        # The lexical index (pg_textsearch) is built after the load, as `ragpg index` builds it at the
        # end of a run; `--lexical-backend sql` measures the SQL BM25 alone.
        r = settings.retrieval
        started_bm25 = time.perf_counter()
        backend = lexical_backend.choose_for_vault(conn, VAULT, args.lexical_backend, r.bm25_k1, r.bm25_b)
        out["load"]["bm25_index_build_s"] = round(time.perf_counter() - started_bm25, 2) if backend != "sql" else None
        print(f"  lexical backend {backend}; bm25 index build {out['load']['bm25_index_build_s']} s", flush=True)
        conn.execute("vacuum analyze")
        conn.execute("checkpoint")  # the load's dirty pages written before any search is timed
        out["sizes_bytes"] = relation_sizes(conn, model.embedding_table)
        out["lexical_backend"] = lexical_backends(conn)
        # Chunk ids in corpus order (source paths end in doc<number>.md), whatever order they were written in.
        ids = np.array([r["id"] for r in conn.execute(
            "select c.id from chunks c join documents d on d.id = c.document_id where c.vault_id = %s "
            "order by substring(d.source_path from 'doc([0-9]+)[.]md$')::integer, c.ordinal", (vault.id,))],
            dtype=np.int64)
        assert len(ids) == corpus.n_chunks

        print(f"[{label(n)}] exact top-{K} in numpy ...", flush=True)
        fq = args.filtered_queries
        truth = corpus_mod.exact_top_k(corpus, qvecs, K, {"none": None, **{k: masks[k] for k in corpus_mod.FILTERS}})
        searcher = Searcher(conn, model)
        with MemorySampler(server_pid) as mem:
            print(f"[{label(n)}] unfiltered queries ...", flush=True)
            out["unfiltered"] = unfiltered(searcher, texts, qvecs, ids, truth["none"], args.warmup)
            if args.ef_sweep:
                print(f"[{label(n)}] unfiltered match_native at ef_search {args.ef_sweep} ...", flush=True)
                out["unfiltered_ef_sweep"] = ef_sweep(searcher, qvecs, ids, truth["none"], args.warmup,
                                                      [int(x) for x in args.ef_sweep.split(",")])
            out["filtered"] = {}
            for name in corpus_mod.FILTERS:
                print(f"[{label(n)}] filtered: {name} ...", flush=True)
                out["filtered"][name] = filtered(searcher, name, texts[:fq], qvecs[:fq], ids, truth[name][:fq],
                                                 int(masks[name].sum()))
            print(f"[{label(n)}] passage queries ...", flush=True)
            ptexts, pvecs = corpus_mod.passage_queries(fq, args.seed, vectors=args.vectors)
            ptruth = corpus_mod.exact_top_k(corpus, pvecs, K,
                                            {"none": None, **{k: masks[k] for k in corpus_mod.FILTERS}})
            out["passage_queries"] = passage_recall(searcher, pvecs, ids, ptruth)
            if args.context_queries:
                print(f"[{label(n)}] compute_context ...", flush=True)
                out["compute_context"] = context_pass(url, texts[:args.context_queries + 5],
                                                       "hash" if args.vectors == "hash" else "local")
        out["query_memory_peaks"] = mem.peaks()
        conn.close()
    return out


def run_tenants(n: int, args: argparse.Namespace, corpus: corpus_mod.Corpus, masks: dict[str, np.ndarray],
                conn: psycopg.Connection, model: Any, url: str, server_pid: int | None, out: dict[str, Any],
                settings: Any) -> dict[str, Any]:
    """`--tenants N`: the corpus over N vaults (bench/scale_tenants.py), searched unscoped, with the
    corpus-wide filters, and scoped to one vault per size class."""
    doc_vault = tenants_mod.assignment(corpus.n_docs, args.tenants, args.seed)
    vault_rank = tenants_mod.chunk_vaults(corpus, doc_vault)
    out["tenants"] = tenants_mod.size_summary(vault_rank, args.tenants)
    print(f"[{label(n)}] loading {corpus.n_chunks} chunks into {args.tenants} vaults ...", flush=True)
    with MemorySampler(server_pid) as mem:
        ingest = settings.ingest if args.own_partition_min_chunks is None else settings.ingest.model_copy(
            update={"own_partition_min_chunks": args.own_partition_min_chunks})
        out["load"] = tenants_mod.load(conn, corpus, model, prepared(corpus, doc_vault), doc_vault, args.tenants,
                                       ingest)
    out["load"].update(chunks_per_s=round(corpus.n_chunks / out["load"]["seconds"]["total"], 1),
                       client_peak_rss_mb=round(client_peak_rss_mb(), 1), memory_peaks=mem.peaks())
    vault_ids = {v["name"]: v["id"] for v in out["load"].pop("vaults")}
    print(f"  seconds {out['load']['seconds']}", flush=True)
    # each vault's lexical index (pg_textsearch: one table and bm25 index per vault), as `ragpg index` builds it
    r = settings.retrieval
    started_bm25 = time.perf_counter()
    backends = [lexical_backend.choose_for_vault(conn, name, args.lexical_backend, r.bm25_k1, r.bm25_b)
                for name in vault_ids]
    out["load"]["bm25_index_build_s"] = round(time.perf_counter() - started_bm25, 2)
    out["lexical_backend"] = {b: backends.count(b) for b in sorted(set(backends))}
    print(f"  lexical backends {out['lexical_backend']}; bm25 index builds {out['load']['bm25_index_build_s']} s",
          flush=True)
    conn.execute("vacuum analyze")
    # The load's dirty pages written now rather than by a checkpoint running through the first scope
    # timed (1M chunks: the 10 % folder filter, timed first, read 73 ms in two runs, 44-54 ms when
    # replayed later on the same database; the checkpoint is the suspected, not proven, cause).
    conn.execute("checkpoint")
    out["sizes_bytes"] = relation_sizes(conn, model.embedding_table)
    texts, qvecs = corpus_mod.queries(args.queries + args.warmup, args.seed, vectors=args.vectors)
    ids = np.array([r["id"] for r in conn.execute(
        "select c.id from chunks c join documents d on d.vault_id = c.vault_id and d.id = c.document_id "
        "order by substring(d.source_path from 'doc([0-9]+)[.]md$')::integer, c.ordinal")], dtype=np.int64)
    assert len(ids) == corpus.n_chunks
    fq = args.filtered_queries
    measured = list(tenants_mod.scopes(vault_rank, args.tenants, masks, vault_ids))
    print(f"[{label(n)}] exact top-{K} in numpy ...", flush=True)
    corpus_wide = corpus_mod.FILTERS if args.corpus_filters else {}
    truth = corpus_mod.exact_top_k(corpus, qvecs, K, {"none": None, **{k: masks[k] for k in corpus_wide},
                                                      **{name: mask for name, _, _, mask in measured}})
    searcher = Searcher(conn, model)
    with MemorySampler(server_pid) as mem:
        print(f"[{label(n)}] unfiltered queries ...", flush=True)
        out["unfiltered"] = unfiltered(searcher, texts, qvecs, ids, truth["none"], args.warmup)
        out["filtered"] = {}
        for name, spec, bare, mask in measured:
            print(f"[{label(n)}] scoped: {name} ...", flush=True)
            out["filtered"][name] = filtered(searcher, name, texts[:fq], qvecs[:fq], ids, truth[name][:fq],
                                             int(mask.sum()), spec, bare)
        for name in corpus_wide:
            print(f"[{label(n)}] filtered: {name} ...", flush=True)
            out["filtered"][name] = filtered(searcher, name, texts[:fq], qvecs[:fq], ids, truth[name][:fq],
                                             int(masks[name].sum()))
    out["query_memory_peaks"] = mem.peaks()
    conn.close()
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default="100000", help="comma-separated chunk counts")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--lexical-backend", choices=["auto", "sql", "pg_textsearch"], default="auto",
                   help="auto: pg_textsearch's bm25 index when the server has it (ragpg[bm25]), else the SQL BM25")
    p.add_argument("--queries", type=int, default=200, help="unfiltered queries measured (after the warm-up)")
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--filtered-queries", type=int, default=50, help="queries per filter")
    p.add_argument("--context-queries", type=int, default=50, help="compute_context calls (0: skip)")
    p.add_argument("--server-setting", action="append", default=[], metavar="NAME=VALUE",
                   help="postgresql.conf setting for the throwaway server (ALTER SYSTEM + restart; the embedded "
                        "server's own command-line memory settings win over it); repeatable")
    p.add_argument("--out-dir", type=Path, default=REPO / "bench" / "results")
    p.add_argument("--vectors", choices=["hash", "model"], default="hash",
                   help="hash: rag.embed.hash of each chunk; model: the local model's geometry (pooled sentence "
                        "vectors, bench/scale_vectors.py), queries embedded with the local model; results go to "
                        "scale-<size>-model.json")
    p.add_argument("--tenants", type=int, default=0, metavar="N",
                   help="spread the corpus over N vaults of Zipf-distributed sizes and add one-vault searches "
                        "(filtered.vault_*); results go to scale-<size>-tenants<N>.json")
    p.add_argument("--own-partition-min-chunks", type=int, default=None, metavar="N",
                   help="with --tenants: ingest.own_partition_min_chunks for the load (default: the setting's); a "
                        "number above the corpus puts every vault in the shared partition, one graph: the "
                        "single-graph figures of the same layout; results go to scale-<size>-tenants<N>-own<N>.json")
    p.add_argument("--corpus-filters", action=argparse.BooleanOptionalAction, default=True,
                   help="with --tenants: also measure the metadata filters over every vault (each visits every "
                        "vault's partition; --no-corpus-filters skips them at 1,000 vaults)")
    p.add_argument("--ef-sweep", default="", metavar="EF,EF,...",
                   help="also measure unfiltered match_native recall and latency at these ef_search values")
    args = p.parse_args(argv)
    results = []
    for n in (int(x) for x in args.sizes.split(",")):
        started, load_before = time.perf_counter(), os.getloadavg()
        result = run_size(n, args)
        result["meta"] = {"command": " ".join([Path(sys.argv[0]).name, *(argv or sys.argv[1:])]),
                          "seconds": round(time.perf_counter() - started, 1),
                          "load_average_start": load_before, "load_average_end": os.getloadavg(),
                          "finished": time.strftime("%Y-%m-%d %H:%M:%S")}
        args.out_dir.mkdir(parents=True, exist_ok=True)
        path = args.out_dir / (f"scale-{label(n)}{'' if args.vectors == 'hash' else '-' + args.vectors}"
                               f"{f'-tenants{args.tenants}' if args.tenants else ''}"
                               f"{f'-own{args.own_partition_min_chunks}' if args.own_partition_min_chunks is not None else ''}"
                               ".json")
        path.write_text(json.dumps(result, indent=1, default=str) + "\n")
        results.append(result)
        print(table([result]), flush=True)
        print(f"wrote {path}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
