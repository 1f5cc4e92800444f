"""The peer pipelines of `bench/peers.py`: LlamaIndex's and LangChain's own markdown retrieval,
each as its documentation sets it up, embedding with ragpg's embedder.

Installed apart from ragpg (`pip install --require-hashes -r requirements/peers.lock`); this
module is imported only by the benchmark, never by `rag`.

Each pipeline is a `Ranker`: `rank(query, folder, depth)` returns the source paths of its best
`depth` chunks, best first (a path once per chunk; the scorer keeps each note at its first chunk).
A folder-scoped query gets the folder as a metadata filter where the framework has one (LlamaIndex:
a `MetadataFilters` on both legs; LangChain: the in-memory vector store's filter function, and a
BM25 retriever built over that folder's chunks, since LangChain's BM25Retriever has no filter);
the fused list is then also filtered by path, because a filtered BM25 leg of LlamaIndex pads its
top k with zero-score chunks from outside the folder.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from rag.embed.base import Embedder

log = logging.getLogger(__name__)

FOLDERS_KEY = "ragpg_bench_folders"  # our filter key: every folder above the note, never embedded
PATH_KEY = "ragpg_bench_path"  # the note's path relative to the vault root, never embedded
LANGCHAIN_HEADERS = [("#", "Header 1"), ("##", "Header 2"), ("###", "Header 3")]  # LangChain's docs
LANGCHAIN_CHUNK_CHARS, LANGCHAIN_OVERLAP_CHARS = 1000, 200  # LangChain's RAG tutorial
LLAMA_EMBED_BATCH = 64  # texts per embedder call (LlamaIndex's default of 10 wastes ragpg's length batching)


class Ranker(Protocol):
    def rank(self, query: str, folder: str | None, depth: int) -> list[str]: ...


def folders_above(path: str) -> list[str]:
    """`a/b/c.md` -> ['a', 'a/b']: the folders a folder filter on any of them must keep."""
    parts = path.split("/")[:-1]
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


def in_folder(path: str, folder: str | None) -> bool:
    """ragpg's folder scope: the folder itself and everything under it."""
    return folder is None or folder.strip("/") in folders_above(path)


class CachedEmbedder:
    """ragpg's embedder with a vector cache by text (sha256) kept on disk between runs: the peers
    embed the same chunks on every run, and a query vector is a one-text document vector."""

    def __init__(self, embedder: Embedder, cache_file: Path | None) -> None:
        self.embedder = embedder
        self.cache_file = cache_file
        self.vectors: dict[str, np.ndarray] = {}
        self.embedded = 0
        if cache_file is not None and cache_file.is_file():
            with np.load(cache_file) as data:
                self.vectors = dict(zip(data["keys"].tolist(), data["vectors"], strict=True))

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        keys = [hashlib.sha256(t.encode()).hexdigest() for t in texts]
        missing = {k: t for k, t in zip(keys, texts, strict=True) if k not in self.vectors}
        if missing:
            fresh = self.embedder.embed_documents(list(missing.values()))
            self.vectors.update(zip(missing, fresh, strict=True))
            self.embedded += len(missing)
        return np.stack([self.vectors[k] for k in keys]) if keys else np.zeros((0, self.embedder.dims), np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        vector: np.ndarray = self.embed_documents([text])[0]
        return vector

    def save(self) -> None:
        if self.cache_file is None or not self.embedded:
            return
        self.cache_file.parent.mkdir(parents=True, exist_ok=True)
        keys = list(self.vectors)
        tmp = self.cache_file.with_suffix(".tmp.npz")
        np.savez(tmp, keys=np.array(keys), vectors=np.stack([self.vectors[k] for k in keys]))
        tmp.replace(self.cache_file)


# -- LlamaIndex ------------------------------------------------------------------------------------

def llama_embedding(embedder: CachedEmbedder) -> Any:
    """ragpg's embedder as a LlamaIndex `BaseEmbedding`."""
    from llama_index.core.base.embeddings.base import BaseEmbedding
    from pydantic import PrivateAttr

    class RagpgEmbedding(BaseEmbedding):  # type: ignore[misc]
        _embedder: CachedEmbedder = PrivateAttr()

        def __init__(self, inner: CachedEmbedder) -> None:
            super().__init__(model_name=inner.embedder.model_key, embed_batch_size=LLAMA_EMBED_BATCH)
            self._embedder = inner

        def _get_query_embedding(self, query: str) -> list[float]:
            return [float(x) for x in self._embedder.embed_query(query)]

        def _get_text_embedding(self, text: str) -> list[float]:
            return self._get_text_embeddings([text])[0]

        def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
            return self._embedder.embed_documents(texts).tolist()  # type: ignore[no-any-return]

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return self._get_query_embedding(query)

    return RagpgEmbedding(embedder)


def llama_offline(embed_model: Any) -> None:
    """No OpenAI anywhere: LlamaIndex's global defaults would build OpenAI clients on first use."""
    from llama_index.core import Settings
    from llama_index.core.llms import MockLLM

    Settings.llm = MockLLM()
    Settings.embed_model = embed_model


def llama_documents(vault: Path) -> list[Any]:
    """SimpleDirectoryReader over the vault's markdown, each document told its relative path and
    folders (kept out of the embedded and LLM text, so filtering changes nothing the model sees)."""
    from llama_index.core import SimpleDirectoryReader

    docs = SimpleDirectoryReader(str(vault), recursive=True, required_exts=[".md"]).load_data()
    for doc in docs:
        rel = Path(doc.metadata["file_path"]).resolve().relative_to(vault).as_posix()
        doc.metadata[PATH_KEY] = rel
        doc.metadata[FOLDERS_KEY] = folders_above(rel)
        for keys in (doc.excluded_embed_metadata_keys, doc.excluded_llm_metadata_keys):
            keys.extend([PATH_KEY, FOLDERS_KEY])
    return docs


def llama_nodes(docs: list[Any], parser: str) -> list[Any]:
    from llama_index.core.node_parser import MarkdownNodeParser, SentenceSplitter

    chosen = MarkdownNodeParser() if parser == "markdown" else SentenceSplitter()  # defaults: 1024 tokens, 200
    return list(chosen.get_nodes_from_documents(docs))


class LlamaPipeline:
    """VectorStoreIndex + BM25Retriever, fused by QueryFusionRetriever (`reciprocal_rerank`, one
    query: no LLM writes extra ones); `leg` picks the fused list or one leg alone."""

    def __init__(self, nodes: list[Any], embed_model: Any, leg_k: int) -> None:
        from llama_index.core import VectorStoreIndex

        self.nodes, self.leg_k = nodes, leg_k
        self.index = VectorStoreIndex(nodes, embed_model=embed_model)
        self._legs: dict[str | None, tuple[Any, Any]] = {}

    def legs(self, folder: str | None) -> tuple[Any, Any]:
        if folder not in self._legs:
            import Stemmer
            from llama_index.core.vector_stores import FilterOperator, MetadataFilter, MetadataFilters
            from llama_index.retrievers.bm25 import BM25Retriever

            filters = None if folder is None else MetadataFilters(filters=[MetadataFilter(
                key=FOLDERS_KEY, value=folder.strip("/"), operator=FilterOperator.CONTAINS)])
            vector = self.index.as_retriever(similarity_top_k=self.leg_k, filters=filters)
            bm25 = BM25Retriever.from_defaults(nodes=self.nodes, similarity_top_k=self.leg_k, filters=filters,
                                               stemmer=Stemmer.Stemmer("english"), language="english")
            self._legs[folder] = (vector, bm25)
        return self._legs[folder]

    def ranker(self, leg: str) -> Ranker:
        return _LlamaRanker(self, leg)


class _LlamaRanker:
    def __init__(self, pipeline: LlamaPipeline, leg: str) -> None:
        self.pipeline, self.leg = pipeline, leg

    def rank(self, query: str, folder: str | None, depth: int) -> list[str]:
        from llama_index.core.llms import MockLLM
        from llama_index.core.retrievers import QueryFusionRetriever

        vector, bm25 = self.pipeline.legs(folder)
        if self.leg == "vector":
            retriever = vector
        elif self.leg == "bm25":
            retriever = bm25
        else:
            retriever = QueryFusionRetriever([vector, bm25], llm=MockLLM(), mode="reciprocal_rerank",
                                             similarity_top_k=self.pipeline.leg_k, num_queries=1, use_async=False)
        paths = [hit.node.metadata[PATH_KEY] for hit in retriever.retrieve(query)]
        return [p for p in paths if in_folder(p, folder)][:depth]


# -- LangChain -------------------------------------------------------------------------------------

def langchain_embeddings(embedder: CachedEmbedder) -> Any:
    """ragpg's embedder as a LangChain `Embeddings`."""
    from langchain_core.embeddings import Embeddings

    class RagpgEmbeddings(Embeddings):  # type: ignore[misc]
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return embedder.embed_documents(texts).tolist()  # type: ignore[no-any-return]

        def embed_query(self, text: str) -> list[float]:
            return [float(x) for x in embedder.embed_query(text)]

    return RagpgEmbeddings()


def langchain_chunks(vault: Path) -> list[Any]:
    """TextLoader per markdown file, MarkdownHeaderTextSplitter (headers into metadata), then
    RecursiveCharacterTextSplitter, as LangChain's markdown how-to chains them."""
    from langchain_community.document_loaders import DirectoryLoader, TextLoader
    from langchain_text_splitters import MarkdownHeaderTextSplitter, RecursiveCharacterTextSplitter

    docs = DirectoryLoader(str(vault), glob="**/*.md", loader_cls=TextLoader,
                           loader_kwargs={"encoding": "utf-8"}).load()
    by_header = MarkdownHeaderTextSplitter(headers_to_split_on=LANGCHAIN_HEADERS)
    sections = []
    for doc in sorted(docs, key=lambda d: d.metadata["source"]):
        rel = Path(doc.metadata["source"]).resolve().relative_to(vault).as_posix()
        for section in by_header.split_text(doc.page_content):
            section.metadata.update(doc.metadata, **{PATH_KEY: rel})
            sections.append(section)
    splitter = RecursiveCharacterTextSplitter(chunk_size=LANGCHAIN_CHUNK_CHARS, chunk_overlap=LANGCHAIN_OVERLAP_CHARS)
    return list(splitter.split_documents(sections))


class LangchainEnsemble:
    """EnsembleRetriever (weighted RRF, equal weights) over BM25Retriever and an InMemoryVectorStore."""

    def __init__(self, chunks: list[Any], embeddings: Any, leg_k: int) -> None:
        from langchain_core.vectorstores import InMemoryVectorStore

        self.chunks, self.leg_k = chunks, leg_k
        self.store = InMemoryVectorStore(embeddings)
        self.store.add_documents(chunks)
        self._retrievers: dict[str | None, Any] = {}

    def retriever(self, folder: str | None) -> Any:
        if folder not in self._retrievers:
            from langchain_classic.retrievers import EnsembleRetriever
            from langchain_community.retrievers import BM25Retriever

            def keep(doc: Any) -> bool:
                return in_folder(doc.metadata[PATH_KEY], folder)

            search_kwargs: dict[str, Any] = {"k": self.leg_k}
            if folder is not None:
                search_kwargs["filter"] = keep
            bm25 = BM25Retriever.from_documents([c for c in self.chunks if keep(c)], k=self.leg_k)
            vector = self.store.as_retriever(search_kwargs=search_kwargs)
            self._retrievers[folder] = EnsembleRetriever(retrievers=[bm25, vector], weights=[0.5, 0.5])
        return self._retrievers[folder]

    def rank(self, query: str, folder: str | None, depth: int) -> list[str]:
        paths = [doc.metadata[PATH_KEY] for doc in self.retriever(folder).invoke(query)]
        return [p for p in paths if in_folder(p, folder)][:depth]


# -- building them ---------------------------------------------------------------------------------

def vault_pipelines(vault: Path, embedder: CachedEmbedder, leg_k: int,
                    say: Callable[[str], None]) -> dict[str, Ranker]:
    """Every peer over the vault, by display name."""
    vault = vault.resolve()
    embed_model = llama_embedding(embedder)
    llama_offline(embed_model)
    docs = llama_documents(vault)
    rankers: dict[str, Ranker] = {}
    for parser in ("markdown", "sentence"):
        nodes = llama_nodes(docs, parser)
        say(f"llamaindex {parser}: {len(docs)} documents, {len(nodes)} nodes; embedding")
        pipeline = LlamaPipeline(nodes, embed_model, leg_k)
        label = "MarkdownNodeParser" if parser == "markdown" else "SentenceSplitter"
        rankers[f"llamaindex {label} fused"] = pipeline.ranker("fused")
        if parser == "markdown":
            rankers[f"llamaindex {label} vector"] = pipeline.ranker("vector")
            rankers[f"llamaindex {label} bm25"] = pipeline.ranker("bm25")
    chunks = langchain_chunks(vault)
    say(f"langchain: {len(chunks)} chunks; embedding")
    rankers["langchain ensemble"] = LangchainEnsemble(chunks, langchain_embeddings(embedder), leg_k)
    embedder.save()
    return rankers


def framework_versions() -> dict[str, str | None]:
    from importlib.metadata import PackageNotFoundError, version

    found: dict[str, str | None] = {}
    for dist in ("llama-index-core", "llama-index-retrievers-bm25", "bm25s", "langchain-core", "langchain-classic",
                 "langchain-community", "langchain-text-splitters", "rank-bm25"):
        try:
            found[dist] = version(dist)
        except PackageNotFoundError:
            found[dist] = None
    return found
