"""bench/peers.py's own helpers, which need no peer framework: ragpg's folder scope as the peers
apply it, the per-kind summary and the case-by-case comparison over real scored cases, the search
seam a peer is wrapped in, and the on-disk embedding cache (with the hash embedder in tmp_path)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import peers  # noqa: E402
import peers_frameworks as pf  # noqa: E402

from rag.config import EmbeddingSettings  # noqa: E402
from rag.embed.registry import get_embedder  # noqa: E402
from rag.eval.golden import GoldenCase  # noqa: E402
from rag.eval.metrics import score_case  # noqa: E402
from rag.eval.results import EvalHit  # noqa: E402


@pytest.mark.parametrize(("path", "folder", "kept"), [
    ("Bases/Layouts/Cards.md", "Bases", True),
    ("Bases/Layouts/Cards.md", "Bases/Layouts", True),
    ("Bases/Layouts/Cards.md", "/Bases/", True),
    ("Bases2/Cards.md", "Bases", False),
    ("Bases.md", "Bases", False),
    ("Home.md", None, True),
    ("Home.md", "Plugins", False),
])
def test_folder_scope_keeps_the_folder_and_below_only(path: str, folder: str | None, kept: bool) -> None:
    assert pf.in_folder(path, folder) is kept


def case(case_id: str, tags: tuple[str, ...], must: tuple[str, ...], **kw: object) -> GoldenCase:
    return GoldenCase(id=case_id, query="q", index=1, tags=tags, must_include_source_paths=must, **kw)  # type: ignore[arg-type]


def scored(c: GoldenCase, ranking: list[str]) -> object:
    return score_case(c, EvalHit.from_pairs((p, None) for p in ranking), 10, 10)


def test_by_kind_averages_answerable_cases_per_kind_and_leaves_out_unanswerable() -> None:
    results = [
        scored(case("a", ("single",), ("A.md",)), ["A.md"]),
        scored(case("b", ("single",), ("B.md",)), ["X.md"] * 1 + ["Y.md", "Z.md", "W.md", "V.md", "B.md"]),
        scored(case("c", ("multi_hop",), ("A.md", "B.md")), ["A.md", "X.md"]),
        scored(case("u", ("unanswerable",), (), expect_abstain=True), ["A.md"]),
    ]
    summary = peers.by_kind(results, 10)  # type: ignore[arg-type]
    assert summary["all"]["cases"] == 3
    assert summary["all"][peers.RECALL5] == pytest.approx((1 + 0 + 0.5) / 3, abs=1e-4)
    assert summary["single"][peers.RECALL5] == 0.5 and summary["single"]["cases"] == 2
    assert summary["multi_hop"][peers.RECALL5] == 0.5
    assert summary["folder_scoped"]["cases"] == 0 and peers.RECALL5 not in summary["folder_scoped"]


def test_differences_name_the_cases_each_side_finds_more_of() -> None:
    first = {"a": {peers.RECALL5: 1.0}, "b": {peers.RECALL5: 0.0}, "c": {peers.RECALL5: 0.5}, "d": {peers.RECALL5: 1.0}}
    second = {"a": {peers.RECALL5: 0.0}, "b": {peers.RECALL5: 1.0}, "c": {peers.RECALL5: 0.5}}
    assert peers.differences(first, second) == {"first_higher": ["a"], "second_higher": ["b"]}


def test_a_peer_gets_the_case_folder_and_is_cut_at_its_first_k_notes() -> None:
    calls: list[tuple[str, str | None, int]] = []

    class Ranker:
        def rank(self, query: str, folder: str | None, depth: int) -> list[str]:
            calls.append((query, folder, depth))
            return ["Plugins/A.md", "Plugins/A.md", "Plugins/B.md", "Plugins/A.md", "Plugins/C.md"]

    search = peers.peer_search_fn(Ranker(), 40)
    hit = search(case("f", ("folder_scoped",), ("Plugins/B.md",), folders=("Plugins",)), 2)
    assert calls == [("q", "Plugins", 40)]
    assert [i.source_path for i in hit.items] == ["Plugins/A.md", "Plugins/A.md", "Plugins/B.md", "Plugins/A.md"]
    with pytest.raises(ValueError, match="one folder"):
        search(case("g", ("folder_scoped",), ("A.md",), folders=("X", "Y")), 2)


def test_embedding_cache_returns_the_embedder_vectors_and_is_reused_from_disk(tmp_path: Path) -> None:
    embedder = get_embedder("hash", EmbeddingSettings(model="hash"))
    cache_file = tmp_path / "cache.npz"
    first = pf.CachedEmbedder(embedder, cache_file)
    vectors = first.embed_documents(["alpha", "beta", "alpha"])
    assert first.embedded == 2
    np.testing.assert_allclose(vectors, embedder.embed_documents(["alpha", "beta", "alpha"]), rtol=1e-6)
    first.save()
    second = pf.CachedEmbedder(embedder, cache_file)
    np.testing.assert_allclose(second.embed_query("beta"), embedder.embed_query("beta"), rtol=1e-6)
    assert second.embedded == 0
