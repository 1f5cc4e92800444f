"""Test vaults and profiles for compute_context.

The `kb` vault is built so the hash embedder (word and bigram overlap) gives a known shape:
the question `WEAK_QUERY` is mostly function words, so the unrelated stories (which share them)
come closest by cosine while the zorblax notes, which hold its content words, score lower — a weak
base pass in the `focused` profile (vector only, 3 results). A HyDE passage in the vocabulary of
the notes finds all three; one about lanterns and gardens finds the stories.
"""

from __future__ import annotations

STORIES = ("misc/garden.md", "misc/soup.md", "misc/lighthouse.md")
ZORBLAX = ("ops/zorblax-maintenance.md", "ops/zorblax-depot.md", "ops/fleet-register.md")

KB = {
    "misc/garden.md": "What is the point of it? Nobody knows what the garden party menu holds, yet neighbours"
                      " gossip about lanterns, ribbons, cakes and music late into the evening.\n",
    "misc/soup.md": "What is the recipe for it? Grandmother made soup with leeks, barley, carrots, parsley and"
                    " thyme, and cousins travelled by train across three green valleys to taste it.\n",
    "misc/lighthouse.md": "What is the story behind it? The lighthouse keeper told children about storms,"
                          " shipwrecks, gulls and lanterns while waves crashed below the cliffs.\n",
    "ops/zorblax-maintenance.md": "Zorblax units need maintenance twice a year. The maintenance schedule covers"
                                  " filters, belts, bearings and coolant; technicians log each zorblax service"
                                  " visit, torque reading, vibration trace and spare part number in the fleet"
                                  " register.\n",
    "ops/zorblax-depot.md": "The zorblax schedule: spring maintenance replaces intake filters, autumn maintenance"
                            " checks bearings, gaskets, pump seals and coolant levels across the whole northern"
                            " depot fleet.\n",
    "ops/fleet-register.md": "Fleet register notes: every zorblax receives scheduled maintenance; the schedule is"
                             " published by operations each January alongside depot rotas, spare part budgets"
                             " and supplier contacts.\n",
}

WEAK_QUERY = "what is the zorblax maintenance schedule for it"
STRONG_QUERY = "zorblax maintenance schedule filters belts bearings coolant technicians fleet register"
HYDE_GOOD = ("Zorblax maintenance follows a fixed schedule: filters, belts, bearings and coolant are serviced by"
             " technicians and each service visit is logged in the fleet register.")
HYDE_BAD = "Garden parties with lanterns, ribbons and cakes, soup with leeks and barley, storms and shipwrecks."

PROFILES = {
    # vector only and three results, so a pass's result set is a real choice among the six notes
    "focused": {"base": "chat", "retrieval": "vector", "match_count": 3},
    "focused_multi": {"base": "focused", "ragMultiQueryMode": True},
    "cautious": {"base": "focused", "decision_margin": 0.5},
    "uncapped": {"base": "chat", "per_source_cap": 50},
    # two candidates a leg: for WEAK_QUERY the vector leg's are stories, the lexical leg's zorblax notes
    "narrow_legs": {"base": "chat", "candidates": 2, "match_count": 10},
    "narrow_legs_unfilled": {"base": "narrow_legs", "fill_similarity": False},
}

# Ranking: one text under several doc types (and a tie between two blog posts).
RANKING_BODY = "Ada builds the telemetry pipeline for the zorblax fleet and mentors engineers on streaming.\n"
RANKING_TYPES = {"about/ada.md": "profile", "kb/ada.md": "kb", "blog/post/ada.md": "blog",
                 "blog/copy/ada.md": "blog", "photos/ada.md": "photos"}
HANDBOOK_SECTIONS = 6


def ranking_vault() -> dict[str, str]:
    files = {path: f"---\ndoc_type: {kind}\n---\n{RANKING_BODY}" for path, kind in RANKING_TYPES.items()}
    sections = [f"## Part {i}\n\nTelemetry streaming note {i}: the zorblax pipeline batch {i} keeps"
                f" {'telemetry ' * (i + 1)}records.\n" for i in range(HANDBOOK_SECTIONS)]
    files["guides/handbook.md"] = "# Handbook\n\n" + "\n".join(sections)
    return files


def sliding_text(paragraphs: int = 12) -> str:
    """One document of short numbered paragraphs about one topic (every window matches the query)."""
    return "".join(f"Paragraph {i} of the pump manual: check the pump seal, the pump valve and gasket {i}.\n\n"
                   for i in range(paragraphs))


PROMPT_MARKS = {
    "hyde": "Write a short, factual passage",
    "rewrite": "Rewrite the search query below",
    "multi": "different search queries",
    "reverse": "Draft a concise answer",
}


def prompt_kind(prompt: str) -> str:
    return next((kind for kind, mark in PROMPT_MARKS.items() if mark in prompt), "other")
