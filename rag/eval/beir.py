"""`ragpg eval-beir`: retrieval quality per mode on a BEIR dataset loaded as a vault.

The corpus is loaded and indexed the usual way (`ragpg vault add-beir NAME DIR`, `ragpg index
NAME`; each corpus `_id` becomes a document's source path). This module reads the dataset's
`queries.jsonl` and `qrels/<split>.tsv`, runs every judged query through each retrieval mode and
scores the document rankings with ir_measures (trec_eval semantics, as BEIR and MTEB report):

* `vector`  `match_native_chunks_<model>` (cosine, HNSW)           via `rag.retrieval.retrieve.match_vector`
* `bm25`    `match_lexical_chunks` (BM25 in SQL)                    via `rag.retrieval.retrieve.match_lexical`
* `hybrid`  `match_hybrid_chunks_<model>` (RRF of the two in SQL)   via `rag.retrieval.retrieve.match_hybrid`
* `auto`    the full `compute_context` pipeline (Auto-RAG decision tree, profile ranking)

Each mode retrieves the top `depth` passages (setting `eval.beir_depth`, default 100); the
ranking is each document at its first passage. Metrics: nDCG@10, recall@depth and MRR@10, the
mean over the judged queries (a query with no results scores 0). As in BEIR's evaluator, a
document whose id equals the query id is ignored.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ir_measures
from ir_measures import RR, Measure, R, nDCG

from rag.config import Settings
from rag.errors import InputError, NotFoundError
from rag.eval.errors import reading
from rag.runtime import Runtime

BEIR_MODES = ("vector", "bm25", "hybrid", "auto")
QUERIES_FILE = "queries.jsonl"
CORPUS_FILE = "corpus.jsonl"
QRELS_DIR = "qrels"
DEFAULT_SPLIT = "test"
NDCG_CUTOFF = MRR_CUTOFF = 10
AUTO_PROFILE = "chat"
EVAL_PROFILE = "beir-eval"  # the auto profile with its depth raised to the eval depth
# Published nDCG@10 on the test splits (shared/data/beir/PUBLISHED_BASELINES.md), keyed by dataset folder name.
PUBLISHED_NDCG10: Mapping[str, Mapping[str, float]] = {
    "scifact": {"BM25 (BEIR)": 0.665, "all-MiniLM-L6-v2": 0.645, "bge-small-en-v1.5": 0.713},
    "nfcorpus": {"BM25 (BEIR)": 0.325, "all-MiniLM-L6-v2": 0.316, "bge-small-en-v1.5": 0.343},
}


class BeirDataError(InputError):
    """The dataset folder lacks a file, or a file is malformed; the message names the file and line."""


@dataclass(frozen=True)
class BeirQueries:
    root: Path
    split: str
    queries: Mapping[str, str]  # the judged queries, in qrels order
    qrels: Mapping[str, Mapping[str, int]]
    unjudged_without_text: int = 0  # qrels query ids with no text in queries.jsonl (left out)

    @property
    def name(self) -> str:
        return self.root.name


@dataclass(frozen=True)
class ModeResult:
    mode: str
    metrics: Mapping[str, float]
    queries: int
    empty: int  # queries the mode returned nothing for
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        return {"mode": self.mode, "metrics": dict(self.metrics), "queries": self.queries, "empty": self.empty,
                "seconds": round(self.seconds, 3),
                "ms_per_query": round(1000 * self.seconds / self.queries, 2) if self.queries else None}


@dataclass(frozen=True)
class BeirReport:
    dataset: Path
    split: str
    vault: str
    model: str
    depth: int
    queries: int
    embed_seconds: float
    results: tuple[ModeResult, ...]
    notes: tuple[str, ...] = ()
    published: Mapping[str, float] = field(default_factory=dict)

    @property
    def metric_names(self) -> tuple[str, ...]:
        return metric_names(self.depth)

    def to_dict(self) -> dict[str, Any]:
        return {"dataset": str(self.dataset), "split": self.split, "vault": self.vault, "model": self.model,
                "depth": self.depth, "queries": self.queries, "embed_seconds": round(self.embed_seconds, 3),
                "modes": {r.mode: r.to_dict() for r in self.results}, "published_ndcg@10": dict(self.published),
                "notes": list(self.notes)}


def metric_names(depth: int) -> tuple[str, ...]:
    return (f"ndcg@{NDCG_CUTOFF}", f"recall@{depth}", f"mrr@{MRR_CUTOFF}")


def _measures(depth: int) -> dict[str, Measure]:
    ndcg, recall, mrr = metric_names(depth)
    return {ndcg: nDCG @ NDCG_CUTOFF, recall: R @ depth, mrr: RR @ MRR_CUTOFF}


# -- dataset ------------------------------------------------------------------------------------

def parse_modes(text: str | Sequence[str]) -> tuple[str, ...]:
    items = text.split(",") if isinstance(text, str) else list(text)
    modes = tuple(dict.fromkeys(m.strip().lower() for m in items if m.strip()))
    if not modes:
        raise InputError(f"no retrieval mode given (choose from {', '.join(BEIR_MODES)})")
    unknown = [m for m in modes if m not in BEIR_MODES]
    if unknown:
        raise InputError(f"unknown retrieval mode '{unknown[0]}' (choose from {', '.join(BEIR_MODES)})")
    return modes


def load_beir_queries(root: Path, split: str = DEFAULT_SPLIT) -> BeirQueries:
    root = Path(root).expanduser()
    if not root.is_dir():
        raise BeirDataError(f"BEIR dataset folder not found: {root}")
    qrels_path = root / QRELS_DIR / f"{split}.tsv"
    if not qrels_path.is_file():
        available = sorted(p.stem for p in (root / QRELS_DIR).glob("*.tsv")) if (root / QRELS_DIR).is_dir() else []
        hint = f" (splits here: {', '.join(available)})" if available else f" (no {QRELS_DIR}/*.tsv in {root})"
        raise BeirDataError(f"no qrels for split '{split}': {qrels_path} not found{hint}")
    qrels = read_qrels(qrels_path)
    texts = read_queries(root / QUERIES_FILE)
    judged = {qid: texts[qid] for qid in qrels if qid in texts}
    if not judged:
        raise BeirDataError(f"{qrels_path}: none of its {len(qrels)} query ids is in {root / QUERIES_FILE}")
    return BeirQueries(root=root.resolve(), split=split, queries=judged,
                       qrels={qid: qrels[qid] for qid in judged}, unjudged_without_text=len(qrels) - len(judged))


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    """`query-id <TAB> corpus-id <TAB> score`, with an optional header line; CRLF is fine."""
    qrels: dict[str, dict[str, int]] = {}
    for line_no, line in _lines(path):
        fields = line.split("\t")
        if len(fields) != 3:
            raise BeirDataError(f"{path}:{line_no}: expected 3 tab-separated fields "
                                f"(query-id, corpus-id, score), got {len(fields)}")
        qid, doc_id, score = (f.strip() for f in fields)
        try:
            grade = int(score)
        except ValueError:
            if line_no == 1:
                continue  # the header
            raise BeirDataError(f"{path}:{line_no}: score '{score}' is not an integer") from None
        if not qid or not doc_id:
            raise BeirDataError(f"{path}:{line_no}: empty query id or corpus id")
        qrels.setdefault(qid, {})[doc_id] = grade
    if not qrels:
        raise BeirDataError(f"{path}: no judgements")
    return qrels


def read_queries(path: Path) -> dict[str, str]:
    queries: dict[str, str] = {}
    for line_no, line in _lines(path):
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise BeirDataError(f"{path}:{line_no}: invalid JSON: {exc.msg}") from None
        if not isinstance(obj, dict) or not isinstance(obj.get("_id"), str | int) or not isinstance(
                obj.get("text"), str):
            raise BeirDataError(f"{path}:{line_no}: expected an object with '_id' and 'text'")
        queries[str(obj["_id"])] = obj["text"]
    return queries


def _lines(path: Path) -> Iterable[tuple[int, str]]:
    with reading(path, "", BeirDataError), path.open(encoding="utf-8") as fh:
        for line_no, raw in enumerate(fh, start=1):
            line = raw.rstrip("\r\n")
            if line.strip():
                yield line_no, line


# -- the vault ----------------------------------------------------------------------------------

def _load_hint(vault: str, root: Path) -> str:
    return f"load it with `ragpg vault add-beir {vault} {root}` and then `ragpg index {vault}`"


def check_vault(rt: Runtime, vault: str, data: BeirQueries) -> tuple[Any, list[str]]:
    """The indexed model for a loaded-and-indexed BEIR vault, plus notes; NotFoundError naming the fix."""
    from rag.store import models
    from rag.store.vaults import list_vaults

    notes: list[str] = []
    with rt.connection() as conn:
        summary = next((v for v in list_vaults(conn) if v.name == vault), None)
        if summary is None:
            raise NotFoundError(f"vault '{vault}' is not loaded: {_load_hint(vault, data.root)}")
        if summary.settings.get("kind") != "beir":
            raise InputError(f"vault '{vault}' is a folder of notes, not a BEIR dataset; "
                             f"{_load_hint('<name>', data.root)}")
        if summary.chunks == 0:
            raise NotFoundError(f"vault '{vault}' is loaded but not indexed: run `ragpg index {vault}`")
        model = models.get_model(conn, rt.embedder.provider, rt.embedder.model)
        embedded = embedded_chunks(conn, model, summary.id) if model is not None else 0
        if embedded == 0:
            raise NotFoundError(f"vault '{vault}' is not indexed with the embedding model "
                                f"{rt.embedder.model_key}: run `ragpg index {vault}`")
        if embedded < summary.chunks:
            notes.append(f"only {embedded} of {summary.chunks} passages have {rt.embedder.model_key} "
                         f"embeddings (indexing unfinished?): run `ragpg index {vault}`")
    if Path(summary.root_path).resolve() != data.root:
        notes.append(f"vault '{vault}' was loaded from {summary.root_path}, the queries come from {data.root}")
    return model, notes


def embedded_chunks(conn: Any, model: Any, vault_id: int) -> int:
    """How many of the vault's passages have an embedding from `model`."""
    from psycopg import sql

    query = sql.SQL("select count(*) as n from {} e join chunks c on c.id = e.chunk_id where c.vault_id = %s").format(
        sql.Identifier(model.embedding_table))
    row = conn.execute(query, (vault_id,)).fetchone()
    return int(row["n"] if isinstance(row, Mapping) else row[0])


def eval_settings(settings: Settings, profile: str = AUTO_PROFILE) -> Settings:
    """Settings with an `EVAL_PROFILE` profile: `profile` retrieving `eval.beir_depth` passages."""
    depth = settings.eval.beir_depth
    table = {"base": profile, "match_count": depth, "candidates": depth}
    return settings.model_copy(update={"profiles": {**settings.profiles, EVAL_PROFILE: table}})


# -- the run ------------------------------------------------------------------------------------

Progress = Callable[[str], None]


def run_beir(rt: Runtime, data: BeirQueries, vault: str, modes: Sequence[str],
             progress: Progress | None = None, tick: Callable[[], None] | None = None) -> BeirReport:
    """Every judged query through every mode; `rt` should come from `eval_settings(...)` settings."""
    from rag.config_profiles import get_profile, load_profiles
    from rag.retrieval import retrieve

    depth = rt.settings.eval.beir_depth
    modes = parse_modes(modes)
    if "auto" in modes:
        get_profile(EVAL_PROFILE, load_profiles(rt.settings))
    say = progress or (lambda _msg: None)
    model, notes = check_vault(rt, vault, data)
    filter_ = {"vault": vault}
    s = rt.settings.retrieval
    started = time.perf_counter()
    embeddings = {}
    if any(m != "bm25" for m in modes):
        embeddings = {qid: rt.embedder.embed_query(text) for qid, text in data.queries.items()}
    embed_seconds = time.perf_counter() - started
    if embeddings:
        say(f"embedded {len(embeddings)} queries in {embed_seconds:.1f} s ({rt.embedder.model_key})")

    def vector(conn: Any, qid: str, text: str) -> list[str]:
        rows = retrieve.match_vector(conn, model, embeddings[qid], match_count=depth, similarity_threshold=-1.0,
                                     filter=filter_, settings=s)
        return [r.source_path for r in rows]

    def bm25(conn: Any, qid: str, text: str) -> list[str]:
        if not text.strip():  # a blank query finds nothing (match_lexical refuses blank text)
            return []
        return [r.source_path for r in retrieve.match_lexical(conn, text, match_count=depth, filter=filter_,
                                                              settings=s)]

    def hybrid(conn: Any, qid: str, text: str) -> list[str]:
        rows = retrieve.match_hybrid(conn, model, text, embeddings[qid], match_count=depth, filter=filter_,
                                     similarity_threshold=-1.0, settings=s)
        return [r.source_path for r in rows]

    def auto(conn: Any, qid: str, text: str) -> list[str]:
        from rag.compute import compute_context

        result = compute_context(text, vaults=[vault], profile=EVAL_PROFILE, mode="auto", budget_tokens=0,
                                 runtime=rt)
        return [r.candidate.source_path for r in result.ranked]

    runners = {"vector": vector, "bm25": bm25, "hybrid": hybrid, "auto": auto}
    results = []
    for mode in modes:
        result = _run_mode(rt, data, mode, runners[mode], depth, uses_connection=mode != "auto", tick=tick)
        say(f"{mode}: {result.queries} queries in {result.seconds:.1f} s, "
            + ", ".join(f"{name} {value:.4f}" for name, value in result.metrics.items()))
        results.append(result)
    if data.unjudged_without_text:
        notes.append(f"{data.unjudged_without_text} judged query ids have no text in {QUERIES_FILE} and were left out")
    return BeirReport(dataset=data.root, split=data.split, vault=vault, model=rt.embedder.model_key, depth=depth,
                      queries=len(data.queries), embed_seconds=embed_seconds, results=tuple(results),
                      notes=tuple(notes), published=PUBLISHED_NDCG10.get(data.name.lower(), {}))


def _run_mode(rt: Runtime, data: BeirQueries, mode: str, search: Callable[[Any, str, str], list[str]],
              depth: int, *, uses_connection: bool, tick: Callable[[], None] | None = None) -> ModeResult:
    run: dict[str, list[str]] = {}
    tick = tick or (lambda: None)
    started = time.perf_counter()
    if uses_connection:
        with rt.connection() as conn:
            for qid, text in data.queries.items():
                run[qid] = search(conn, qid, text)
                tick()
    else:
        for qid, text in data.queries.items():
            run[qid] = search(None, qid, text)
            tick()
    seconds = time.perf_counter() - started
    rankings = {qid: document_ranking(docs, qid, depth) for qid, docs in run.items()}
    return ModeResult(mode=mode, metrics=score_run(data.qrels, rankings, depth), queries=len(rankings),
                      empty=sum(not docs for docs in rankings.values()), seconds=seconds)


def document_ranking(source_paths: Iterable[str], query_id: str, depth: int) -> list[str]:
    """Each document at its first passage, the query's own id left out (BEIR's ignore_identical_ids)."""
    ranking = [doc for doc in dict.fromkeys(source_paths) if doc != query_id]
    return ranking[:depth]


def score_run(qrels: Mapping[str, Mapping[str, int]], run: Mapping[str, Sequence[str]],
              depth: int) -> dict[str, float]:
    """Mean of each metric over the judged queries; a judged query without results scores 0."""
    measures = _measures(depth)
    by_measure = {m: name for name, m in measures.items()}
    scored = {qid: {doc: float(len(docs) - i) for i, doc in enumerate(docs)} for qid, docs in run.items() if docs}
    totals = dict.fromkeys(measures, 0.0)
    judged = {qid: dict(docs) for qid, docs in qrels.items()}
    if scored:
        for metric in ir_measures.pytrec_eval.iter_calc(list(measures.values()), judged, scored):
            totals[by_measure[metric.measure]] += float(metric.value)
    return {name: totals[name] / len(judged) for name in measures} if judged else totals


# -- output -------------------------------------------------------------------------------------

def render_text(report: BeirReport) -> str:
    names = report.metric_names
    lines = [f"ragpg eval-beir: {report.dataset} (split {report.split}, {report.queries} queries), "
             f"vault '{report.vault}', {report.model}, top {report.depth} passages", ""]
    header = ["mode", *names, "seconds", "ms/query"]
    rows = [header]
    for r in report.results:
        per_query = f"{1000 * r.seconds / r.queries:.1f}" if r.queries else "-"
        rows.append([r.mode, *(f"{r.metrics[n]:.4f}" for n in names), f"{r.seconds:.1f}", per_query])
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    for row in rows:
        cells = [row[0].ljust(widths[0]), *(cell.rjust(w) for cell, w in zip(row[1:], widths[1:], strict=True))]
        lines.append("  ".join(cells).rstrip())
    if report.embed_seconds and any(r.mode != "bm25" for r in report.results):
        lines.append(f"(query embedding: {report.embed_seconds:.1f} s, not included in the mode times)")
    if report.published:
        lines += ["", "published nDCG@10 on this split: " +
                  ", ".join(f"{name} {value:.3f}" for name, value in report.published.items())]
    lines += [f"note: {note}" for note in report.notes]
    return "\n".join(lines) + "\n"
