"""One pipeline: notes `search` and `ask` rank exactly the candidates of the shared retrieve stage
(`rag.retrieval.stage.retrieve_stage` with the notes profile and the scope's filter), in the order
`rag.retrieval.rank.rank_candidates` gives them; a question joining two topics gets both into the top 5."""

from __future__ import annotations

import pytest

from rag.access import Scope
from rag.notes.ask import ask, search
from rag.notes.scope import notes_profile, prepare_scope
from rag.retrieval.rank import rank_candidates
from rag.retrieval.stage import retrieve_stage
from rag.runtime import Runtime
from tests.notes.conftest import use_settings
from tests.notes.kit import cosine, toward, toward_both
from tests.support.ask_trace import trace_json

CORPUS = {
    ("work", "sync/setup.md"): [
        ("# Sync > ## Setup", "Turn on Sync in settings to keep your vault the same on every device."),
        ("# Sync > ## Devices", "Each device signs in once; the vault syncs in the background."),
        ("# Sync > ## Conflicts", "When two devices edit the same note offline, Sync writes a conflict file.")],
    ("work", "sync/history.md"): [("# History", "Sync history keeps every version of a note for a year.")],
    ("work", "publish/site.md"): [
        ("# Publish", "Publish turns notes into a website with its own domain."),
        ("# Publish > ## Pricing", "Publish is paid per site; sync is paid per account.")],
    ("work", "meetings/2024-05-01.md"): [("# Weekly", "We agreed to move the vault to Sync before the launch.")],
    ("work", "garden/plants.md"): [("# Plants", "Tomatoes and basil grow well together in summer.")],
    ("home", "devices.md"): [("# Devices", "The old laptop still syncs the family vault every night.")],
    ("home", "recipes/soup.md"): [("# Soup", "Simmer tomatoes with basil for twenty minutes.")],
}
QUESTION = "How do I sync my vault to a new device?"
TWO_TOPICS = "How do I sync my vault across devices and how do I publish my notes as a website?"
# one word of the notes and nothing close in meaning: a weak base pass (with no word at all, search finds nothing)
WEAK = "zebra quantum volcano tomatoes"


@pytest.fixture
def corpus(notes, monkeypatch):
    # a folder prior that moves scores, so the comparison covers the prior too
    ns = use_settings(monkeypatch, folder_prior_weight=0.4)
    for (vault, path), sections in CORPUS.items():
        notes.note(vault, path, sections)
    return ns


def key(vault: str, path: str, ordinal: int) -> tuple[str, str, int]:
    return vault, path, ordinal


def shared_stages(rt: Runtime, ns, question: str, vaults, folders, filters, k: int):
    """What the shared stages give for this question and scope, called directly."""
    with rt.connection(autocommit=True) as conn:
        sc = prepare_scope(conn, rt, ns, question, list(vaults), list(folders), dict(filters) if filters else None,
                           Scope.unrestricted(), rank_folders=True, match_count=k)
        prof = notes_profile(rt, ns, k)
        assert prof == sc.profile
        found = retrieve_stage(conn, rt, prof, question, sc.filter)
    return sc, found, rank_candidates(found.candidates, prof, prior=sc.prior)


CASES = [
    pytest.param(QUESTION, (), (), None, 20, id="every-vault"),
    pytest.param(QUESTION, ("work",), (), None, 20, id="one-vault"),
    pytest.param(QUESTION, (), ("sync",), None, 20, id="user-folder"),
    pytest.param(QUESTION, (), (), {"folder": {"$in": ["sync", "meetings", ""]}}, 20, id="metadata-filter"),
    pytest.param(QUESTION, (), (), {"vault": "home"}, 20, id="vault-in-filter"),
    pytest.param(TWO_TOPICS, (), (), None, 20, id="two-topics"),
    pytest.param(WEAK, (), (), None, 20, id="weak-base-pass"),
    pytest.param(QUESTION, (), (), None, 3, id="top-3"),
    pytest.param(QUESTION, (), (), None, 30, id="k-above-match-count"),
]


@pytest.mark.parametrize(("question", "vaults", "folders", "filters", "k"), CASES)
def test_search_ranks_exactly_the_candidates_of_the_shared_retrieve_stage(corpus, runtime, question, vaults,
                                                                           folders, filters, k):
    resp = search(question, vaults=list(vaults), folders=list(folders), filters=filters, k=k, by="passage",
                  runtime=runtime)
    sc, found, expected = shared_stages(runtime, corpus, question, vaults, folders, filters, k)
    got = [key(i.vault, i.source_path, i.ordinal) for i in resp.items]
    ranked = [key(r.candidate.vault, r.candidate.source_path, r.candidate.ordinal) for r in expected]
    assert got == ranked[:k]  # search's order is rank_candidates' over the stage's candidates
    assert [i.score for i in resp.items] == [round(r.scores.final, 6) for r in expected[:k]]
    stage = {key(c.vault, c.source_path, c.ordinal) for c in found.candidates}
    assert len(stage) == len(found.candidates) and len(ranked) == len(stage)  # no file over the per-source cap
    if k >= len(stage):
        assert set(got) == stage  # every candidate the stage returned, and nothing else
    assert got, "the case must find something to compare"


def test_the_cases_cover_what_they_claim(corpus, runtime):
    _, two, _ = shared_stages(runtime, corpus, TWO_TOPICS, (), (), None, 20)
    assert two.run.facets == ["How do I sync my vault across devices", "how do I publish my notes as a website"]
    _, weak, _ = shared_stages(runtime, corpus, WEAK, (), (), None, 20)
    assert weak.run.weak.weak and weak.run.route == "prf"
    sc, _, ranked = shared_stages(runtime, corpus, QUESTION, (), (), None, 20)
    assert sc.prior is not None and {r.scores.weights_applied["prior"] for r in ranked} != {1.0}
    _, restricted, _ = shared_stages(runtime, corpus, QUESTION, (), ("sync",), None, 20)
    assert {c.source_path for c in restricted.candidates} == {"sync/setup.md", "sync/history.md"}
    _, home, _ = shared_stages(runtime, corpus, QUESTION, (), (), {"vault": "home"}, 20)
    assert {c.vault for c in home.candidates} == {"home"}


@pytest.mark.parametrize(("question", "folders"), [(QUESTION, ()), (TWO_TOPICS, ()), (QUESTION, ("sync", "home")),
                                                   ("Which tomatoes grow with basil?", ())])
def test_ask_draws_on_the_same_candidates_as_search(corpus, runtime, question, folders):
    resp = ask(question, folders=list(folders), debug=True, runtime=runtime)
    cands = [key(c["vault"], c["path"], c["ordinal"]) for c in trace_json(resp)["candidates"]]
    items = search(question, folders=list(folders), k=20, by="passage", runtime=runtime).items
    assert cands == [key(i.vault, i.source_path, i.ordinal) for i in items]
    assert [c["final"] for c in trace_json(resp)["candidates"]] == [i.score for i in items]
    assert {(r.vault, r.source_path, r.ordinal) for r in resp.references} <= set(cands[:trace_json(resp)["k"]["value"]])


# -- a question that joins two topics -------------------------------------------------------------

FILLER = "Quarterly report figure {i} about the warehouse budget."


def test_a_question_joining_two_topics_gets_both_notes_into_the_top_5(notes, runtime, settings, notes_config):
    """Built so the whole-question search ranks the publishing note 8th: only its facet finds it.

    The notes share no word with the question (BM25 finds none of them, headings included), so the
    ranking is the cosine: to the whole question alone without facets, the best over the question
    and each facet with them (the SQL fusion keeps a chunk's best similarity)."""
    q = notes.query_vector(TWO_TOPICS)
    sync_facet, publish_facet = (notes.query_vector(f) for f in ("How do I sync my vault across devices",
                                                                   "how do I publish my notes as a website"))
    publishing = toward_both(q, publish_facet, 0.45)  # further from the whole question than any report,
    assert cosine(publishing, publish_facet) > 0.7     # closer to its facet than any note to the question
    # file names of no word of the question either: BM25 reads a note's name with its text
    notes.note("work", "everywhere.md", [("# Everywhere", "Keep every laptop and phone identical.")],
               embeddings=[toward_both(q, sync_facet, 0.65)])
    notes.note("work", "pages.md", [("# Pages", "Turn pages into a public site.")], embeddings=[publishing])
    for i in range(6):
        notes.note("work", f"reports/r{i}.md", [("# Report", FILLER.format(i=i))],
                   embeddings=[toward(q, 0.6 - 0.01 * i, seed=10 + i)])
    with_facets = search(TWO_TOPICS, k=5, by="passage", runtime=runtime)
    assert {i.source_path for i in with_facets.items[:2]} == {"everywhere.md", "pages.md"}

    whole = Runtime.from_settings(settings.model_copy(update={"profiles": {"notes": {"facet_split": False}}}),
                                  pool_max_size=2)
    try:
        without = search(TWO_TOPICS, k=5, by="passage", runtime=whole)
        ranked = [i.source_path for i in search(TWO_TOPICS, k=20, by="passage", runtime=whole).items]
    finally:
        whole.close()
    assert [i.source_path for i in without.items] == ["everywhere.md", *[f"reports/r{i}.md" for i in range(4)]]
    assert ranked.index("pages.md") == 7  # after everywhere.md and the six reports

    resp = ask(TWO_TOPICS, debug=True, runtime=runtime)
    assert trace_json(resp)["retrieval"]["facets"] == ["How do I sync my vault across devices",
                                                 "how do I publish my notes as a website"]
    assert {c["path"] for c in trace_json(resp)["candidates"][:5]} >= {"everywhere.md", "pages.md"}
