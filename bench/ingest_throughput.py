"""Ingest throughput: chunks/s of a full index run vs. the embedding model alone, and no-op reindex time.

    python bench/ingest_throughput.py [--vault ../shared/data/obsidian-help] [--providers hash,local]
                                      [--beir ../shared/data/beir/scifact] [--runs 3]

Each provider indexes the vault into a fresh database (on DATABASE_URL's server when set, else a
throwaway embedded server). The embedder is warmed up first, so model loading is not counted.
"Model alone" embeds the same chunk texts, in the same batches, with no parsing or database work.
The no-op figure is the median of `--runs` reindex runs of the unchanged vault, in process and as
a `ragpg reindex` subprocess (which adds interpreter start-up). A script, not a test.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
from psycopg import sql

from rag.config import Settings, load_settings
from rag.embed import Embedder, get_embedder
from rag.ingest.passage_text import embedding_text
from rag.ingest.pipeline import index_vaults
from rag.store import migrate
from rag.store.database import open_connection
from rag.store.embedded import EmbeddedServer
from rag.store.vaults import NewVault, add_vault

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


@contextmanager
def server_url() -> Iterator[str]:
    """A maintenance-database URL: DATABASE_URL's server, or a temporary embedded server."""
    if os.environ.get("DATABASE_URL"):
        yield os.environ["DATABASE_URL"]
        return
    tmp = Path(tempfile.mkdtemp(prefix="ragpg-bench-", dir="/tmp"))
    server = EmbeddedServer(tmp)
    try:
        status = server.start()
        assert status.url
        yield status.url
    finally:
        server.stop()


def fresh_database(admin_url: str) -> str:
    name = f"ragpg_bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(sql.SQL("create database {}").format(sql.Identifier(name)))
    url = re.sub(r"(://[^/?]*/)([^?]*)", lambda m: m.group(1) + name, admin_url, count=1)
    migrate.upgrade(url)
    return url


def drop_database(admin_url: str, url: str) -> None:
    name = psycopg.conninfo.conninfo_to_dict(url)["dbname"]
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(sql.SQL("drop database if exists {} with (force)").format(sql.Identifier(name)))


def bench_settings(url: str, spec: str) -> Settings:
    return load_settings(Path(tempfile.gettempdir()) / "ragpg-bench-absent.toml", database_url=url,
                         embedding={"model": spec})


def add(url: str, name: str, path: Path, kind: str) -> None:
    with open_connection(url, autocommit=True) as conn:
        add_vault(conn, NewVault(name=name, path=path, kind=kind))  # type: ignore[arg-type]


def chunk_texts(url: str) -> list[str]:
    with open_connection(url) as conn:
        rows = conn.execute("select heading_path, content, metadata from chunks order by id").fetchall()
    return [embedding_text(r["heading_path"], r["content"], r["metadata"]) for r in rows]


def model_alone(embedder: Embedder, texts: list[str]) -> float:
    started = time.perf_counter()
    embedder.embed_documents(texts)  # the embedder's own batching, over all texts at once: its best case
    return len(texts) / (time.perf_counter() - started)


def noop_times(settings: Settings, url: str, runs: int) -> tuple[float, float]:
    in_process = [index_vaults(settings).seconds for _ in range(runs)]
    env = {**os.environ, "DATABASE_URL": url, "RAGPG_EMBEDDING__MODEL": settings.embedding.model,
           "RAGPG_CONFIG": str(Path(tempfile.gettempdir()) / "ragpg-bench-absent.toml")}
    cli = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "ragpg_cli.main", "reindex", "--quiet"], env=env, check=True,
                       capture_output=True)
        cli.append(time.perf_counter() - started)
    return statistics.median(in_process), statistics.median(cli)


def bench_one(admin_url: str, spec: str, path: Path, kind: str, runs: int) -> None:
    url = fresh_database(admin_url)
    try:
        settings = bench_settings(url, spec)
        embedder = get_embedder(spec, settings.embedding)
        embedder.embed_documents(["warm up the model"])
        add(url, path.name, path, kind)
        report = index_vaults(settings, embedder=embedder)
        chunks = report.total("chunks_written")
        ingest_rate = chunks / report.seconds
        texts = chunk_texts(url)
        alone = model_alone(embedder, texts)
        print(f"{spec:>6} {path.name}: {report.total('files_indexed')} files, {chunks} chunks in "
              f"{report.seconds:.2f} s -> ingest {ingest_rate:,.0f} chunks/s; model alone {alone:,.0f} chunks/s "
              f"({ingest_rate / alone:.0%})")
        if kind == "folder":
            in_proc, cli = noop_times(settings, url, runs)
            print(f"{spec:>6} {path.name}: no-op reindex median of {runs}: {in_proc:.3f} s in process, "
                  f"{cli:.3f} s as `ragpg reindex` (incl. interpreter start-up)")
    finally:
        drop_database(admin_url, url)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vault", type=Path, default=DATA / "obsidian-help")
    parser.add_argument("--providers", default="hash,local")
    parser.add_argument("--beir", type=Path, default=None, help="Also ingest this BEIR dataset folder.")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    with server_url() as admin_url:
        for spec in args.providers.split(","):
            bench_one(admin_url, spec.strip(), args.vault, "folder", args.runs)
            if args.beir:
                bench_one(admin_url, spec.strip(), args.beir, "beir", args.runs)


if __name__ == "__main__":
    main()
