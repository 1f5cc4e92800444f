"""`bench/peers.py --beir DIR`: the peer pipelines on a BEIR dataset beside `ragpg eval-beir`.

Each corpus document is one node (LlamaIndex `TextNode`, LangChain `Document`) holding what
`ragpg vault add-beir` stores: `title + "\\n\\n" + text`; no splitter runs. Every judged query of
the split goes through each peer and through ragpg's `eval-beir` modes (`rag.eval.beir.run_beir`
on a throwaway data dir loaded with `ragpg vault add-beir` and `ragpg index`, or `--data-dir`),
and both are scored by `rag.eval.beir.score_run`: nDCG@10, recall@depth and MRR@10, the ranking
each document at its first hit, at ragpg's `eval.beir_depth` (100); each peer leg retrieves that
many documents too.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from peers_common import CACHE_DIR, local_embedder, model_slug, ragpg_data_dir, table_lines
from peers_frameworks import (
    FOLDERS_KEY,
    PATH_KEY,
    CachedEmbedder,
    LangchainEnsemble,
    LlamaPipeline,
    Ranker,
    langchain_embeddings,
    llama_embedding,
    llama_offline,
)

from rag.config import LLMSettings, load_settings
from rag.eval.beir import BEIR_MODES, CORPUS_FILE, document_ranking, load_beir_queries, run_beir, score_run


def corpus_texts(root: Path) -> dict[str, str]:
    """Corpus id -> the text ragpg indexes for it."""
    texts: dict[str, str] = {}
    with (root / CORPUS_FILE).open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                obj = json.loads(line)
                title, text = (obj.get("title") or "").strip(), obj.get("text") or ""
                texts[str(obj["_id"]).strip()] = f"{title}\n\n{text}" if title else text
    return texts


def beir_rankers(texts: Mapping[str, str], embedder: CachedEmbedder, depth: int,
                 say: Callable[[str], None]) -> dict[str, Ranker]:
    from langchain_core.documents import Document
    from llama_index.core.schema import TextNode

    embed_model = llama_embedding(embedder)
    llama_offline(embed_model)
    nodes = [TextNode(id_=doc_id, text=text, metadata={PATH_KEY: doc_id, FOLDERS_KEY: []},
                      excluded_embed_metadata_keys=[PATH_KEY, FOLDERS_KEY],
                      excluded_llm_metadata_keys=[PATH_KEY, FOLDERS_KEY]) for doc_id, text in texts.items()]
    say(f"llamaindex: {len(nodes)} nodes; embedding")
    llama = LlamaPipeline(nodes, embed_model, depth)
    embedder.save()
    docs = [Document(page_content=text, metadata={PATH_KEY: doc_id}) for doc_id, text in texts.items()]
    say(f"langchain: {len(docs)} documents")
    rankers: dict[str, Ranker] = {
        "llamaindex fused (QueryFusionRetriever reciprocal_rerank)": llama.ranker("fused"),
        "llamaindex vector (VectorStoreIndex)": llama.ranker("vector"),
        "llamaindex bm25 (BM25Retriever, bm25s)": llama.ranker("bm25"),
        "langchain ensemble (BM25Retriever + InMemoryVectorStore)": LangchainEnsemble(
            docs, langchain_embeddings(embedder), depth),
    }
    embedder.save()
    return rankers


def run_beir_peers(args: argparse.Namespace, say: Callable[[str], None]) -> dict[str, Any]:
    root: Path = args.beir.resolve()
    data = load_beir_queries(root, args.beir_split)
    depth = load_settings().eval.beir_depth
    inner = local_embedder()
    embedder = CachedEmbedder(inner, None if args.no_cache else CACHE_DIR / f"peers-{model_slug(inner)}.npz")
    texts = corpus_texts(root)
    started = time.perf_counter()
    rankers = beir_rankers(texts, embedder, depth, say)
    build_s = time.perf_counter() - started
    systems: dict[str, dict[str, Any]] = {}
    for name, ranker in rankers.items():
        started = time.perf_counter()
        run = {qid: document_ranking(ranker.rank(text, None, depth), qid, depth) for qid, text in data.queries.items()}
        seconds = time.perf_counter() - started
        systems[name] = {"metrics": {m: round(v, 4) for m, v in score_run(data.qrels, run, depth).items()},
                         "ms_per_query": round(1000 * seconds / len(run), 1)}
        say(f"{name}: {systems[name]['metrics']}")
    vault = root.name
    load = [("vault", "add-beir", vault, str(root)), ("index", "--quiet", vault)]
    from rag.eval.beir import eval_settings
    from rag.runtime import Runtime

    with ragpg_data_dir(args.data_dir, load):
        rt = Runtime.from_settings(eval_settings(load_settings(llm=LLMSettings(model=None))), pool_max_size=2)
        try:
            report = run_beir(rt, data, vault, BEIR_MODES, progress=say)
        finally:
            rt.close()
    for mode in report.results:
        systems[f"ragpg eval-beir {mode.mode}"] = {
            "metrics": {m: round(v, 4) for m, v in mode.metrics.items()},
            "ms_per_query": round(1000 * mode.seconds / mode.queries, 1) if mode.queries else None}
    return {"dataset": str(root), "split": data.split, "queries": len(data.queries), "depth": depth,
            "documents": len(texts), "peer_build_s": round(build_s, 1),
            "chunks_embedded_this_run": embedder.embedded, "published_ndcg@10": dict(report.published),
            "systems": systems}


def beir_table(result: Mapping[str, Any]) -> str:
    names = list(next(iter(result["systems"].values()))["metrics"])
    rows = [["system", *names, "ms/q"]]
    for name, row in result["systems"].items():
        rows.append([name, *(f"{row['metrics'][m]:.4f}" for m in names), f"{row['ms_per_query']}"])
    lines = [f"{result['dataset']} split {result['split']} ({result['queries']} queries, "
             f"{result['documents']} documents, depth {result['depth']})", "", *table_lines(rows)]
    if result["published_ndcg@10"]:
        lines += ["", "published nDCG@10: " + ", ".join(f"{k} {v:.3f}" for k, v in result["published_ndcg@10"].items())]
    return "\n".join(lines)
