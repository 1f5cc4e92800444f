"""One request's retrieval state: the decision record (`RetrievalRun`) and the pass runner (`PassContext`).

`PassContext` runs the profile's SQL match function for one query or several fused by RRF in one call
(`search`; `run` for one text/embedding), or the base pass with facets (`base`); routes in
`rag.retrieval.routes` call it for corrections.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np

from rag.config_profiles import Profile
from rag.errors import LLMError
from rag.llm import Message
from rag.llm_budget import DEADLINE_REASON, run_together
from rag.prompts import load_prompt
from rag.retrieval import autorag
from rag.retrieval.facets import split_facets
from rag.retrieval.passes import PassSpec, run_pass, similarity_to
from rag.store import models
from rag.trace import decision_signature
from rag.types import Candidate, Decision, PassRecord

if TYPE_CHECKING:  # the runtime is handed in by the entry point (rag.runtime)
    from rag.runtime import Runtime

LLM_MAX_TOKENS = 300


@dataclass
class RetrievalRun:
    """Mutable record of one request's decision path (becomes `decision`)."""

    mode: str
    route: str = "base"
    weak: autorag.WeakCheck | None = None
    winner: str = "base"
    reason: str = "base pass used"
    passes: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    llm_failures: list[str] = field(default_factory=list)
    multi_query_ran: bool = False
    facets: list[str] = field(default_factory=list)
    timings_ms: dict[str, float] = field(default_factory=dict)
    margin: float | None = None  # best correction's set score minus base's, when a correction was judged
    lexical_backend: str | None = None  # sql or pg_textsearch (rag.store.lexical_backend); None: no lexical leg

    @property
    def llm_deadline_passed(self) -> bool:
        """An LLM step failed because the request's LLM budget (llm.deadline_s) ran out."""
        return any(DEADLINE_REASON in f for f in self.llm_failures)

    @property
    def auto_triggered(self) -> bool:
        return self.mode == "auto" and self.route not in ("base", "multi")

    def path(self) -> list[str]:
        return [self.mode, self.route, *[p["name"] for p in self.passes], self.winner]

    def decision(self, insufficient: bool) -> Decision:
        weak = self.weak
        return Decision(
            mode=self.mode, route=self.route, auto_triggered=self.auto_triggered,
            weak=weak.weak if weak else None, weak_signals=list(weak.signals) if weak else [],
            top_similarity=weak.top_similarity if weak else None,
            share_above_threshold=weak.share_above_threshold if weak else None,
            winner=self.winner, reason=self.reason, margin=self.margin,
            passes=[PassRecord(**p) for p in self.passes], notes=list(self.notes),
            llm_failures=list(self.llm_failures), multi_query_ran=self.multi_query_ran, facets=list(self.facets),
            insufficient=insufficient, lexical_backend=self.lexical_backend,
            decision_signature=decision_signature(self.path()),
        )


def cut_weights(p: Profile) -> dict[str, float]:
    """The weights of the SQL RRF cut (Profile.rrf_cut_weights)."""
    if p.rrf_cut_weights == "fusion":
        return {"vector": p.w_cosine, "lexical": p.w_bm25}
    return {"vector": 1.0, "lexical": 1.0}


@dataclass
class PassContext:
    conn: Any
    rt: Runtime
    prof: Profile
    model: models.EmbeddingModelRef
    filter_: dict[str, Any]
    query: str
    query_embedding: np.ndarray | None

    def base(self, run: RetrievalRun) -> list[Candidate]:
        """The base pass; a question that joins topics is searched whole and by facet, fused in SQL."""
        facets = split_facets(self.query) if self.prof.facet_split and self.query_embedding is not None else []
        run.facets = facets
        return self.search("base", [PassSpec("base", self.query, self.query_embedding),
                                    *(PassSpec("base", f, self.embed(f)) for f in facets)], run)

    def run(self, name: str, text: str, embedding: np.ndarray | None, run: RetrievalRun) -> list[Candidate]:
        """A pass for one query text/embedding."""
        return self.search(name, [PassSpec(name, text, embedding)], run)

    def search(self, name: str, specs: Sequence[PassSpec], run: RetrievalRun) -> list[Candidate]:
        """A pass for one query or several, fused by reciprocal rank fusion in one SQL call."""
        p, s = self.prof, self.rt.settings.retrieval
        with self.rt.tracer.stage(name) as span:
            found = run_pass(self.conn, self.model, specs, retrieval=p.retrieval, match_count=p.match_count,
                             filter_=self.filter_, rrf_k=s.rrf_k, weights=cut_weights(p),
                             candidate_count=p.candidates, settings=s)
            top = max((c.similarity for c in found if c.similarity is not None), default=None)
            span.set(count=len(found), queries=len(specs), topSimilarity=top)
        run.passes.append({"name": name, "count": len(found), "queries": len(specs), "top_similarity": top})
        return found

    def embed(self, text: str) -> np.ndarray | None:
        return self.rt.embedder.embed_query(text) if self.prof.retrieval != "lexical" else None

    def llm_text(self, prompt: str, run: RetrievalRun, **values: Any) -> str | None:
        return self.llm_texts([prompt], run, **values)[0]

    def llm_texts(self, prompts: Sequence[str], run: RetrievalRun, **values: Any) -> list[str | None]:
        """What the LLM wrote for each prompt (None where it failed or none is configured). Independent
        prompts run at once, under the request's one LLM budget (rag.llm_budget)."""
        llm = self.rt.llm
        if llm is None:
            return [None] * len(prompts)
        if run.llm_failures:  # it already failed in this request: a down LLM must not cost a timeout per call
            run.notes.extend(f"{p}: skipped after an earlier LLM failure" for p in prompts)
            return [None] * len(prompts)
        calls = [partial(llm.complete, [Message("user", load_prompt(p).render(**values))], max_tokens=LLM_MAX_TOKENS)
                 for p in prompts]
        texts: list[str | None] = []
        for prompt, outcome in zip(prompts, run_together(calls), strict=True):
            if isinstance(outcome, LLMError):
                run.llm_failures.append(f"{prompt}: {outcome}")
            texts.append(None if isinstance(outcome, LLMError) else outcome)
        return texts

    def set_score(self, items: Sequence[Candidate]) -> autorag.SetScore:
        sims: dict[int, float] = {}
        if self.query_embedding is not None:
            sims = similarity_to(self.conn, self.model, self.query_embedding, [c.chunk_id for c in items])
        return autorag.score_result_set([(sims.get(c.chunk_id), c.content) for c in items], self.query,
                                        top_k=self.prof.match_count)
