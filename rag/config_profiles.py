"""Retrieval profiles: named bundles of the tunables that ranking and the Auto-RAG loop read.

Built in: `chat`, `notes`, `default_research`, `decisions_recent`, `templates_lookup`.
Users add or adjust profiles in the config file:

    [profiles.mine]
    base = "default_research"     # optional: start from another profile (default: the field defaults)
    w_freshness = 0.2
    type_weights = { memo = 1.2 } # mapping fields merge key by key with the base

A table named like a built-in adjusts that built-in. Unknown keys and bad values are
rejected with a one-line ConfigError when the settings load (`Settings` resolves every table once
there), not at the first request that names the profile.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    NonNegativeFloat,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
    ValidationError,
    field_validator,
)

from rag.config_groups import ZeroToOne
from rag.errors import ConfigError, NotFoundError

Retrieval = Literal["vector", "lexical", "hybrid"]

# Doc-type multipliers of the default profile (rag.retrieval.rank). Keys are matched lower-cased.
DEFAULT_TYPE_WEIGHTS: dict[str, float] = {
    "profile": 1.15, "projects": 1.15, "project": 1.15,
    "kb": 1.10, "kb_article": 1.10,
    "blog": 1.00, "blog_post": 1.00,
    "photo": 0.30, "photos": 0.30,
}
MAPPING_FIELDS = ("type_weights", "persona_weights", "metadata_boost")
KEY_ALIASES = {"ragMultiQueryMode": "multi_query"}  # the name other RAG stacks use for this switch
BASE_KEY = "base"


class Profile(BaseModel):
    """Every field has a default; the defaults are the balanced `chat` profile. The docstring under a
    field is its description."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True, use_attribute_docstrings=True)

    name: str = "chat"
    """The profile's name, as `profile=` and [profiles.NAME] give it."""
    # retrieval
    retrieval: Retrieval = "hybrid"
    """How passages are found: "vector" (meaning), "lexical" (words, BM25) or "hybrid" (both, fused in
    SQL)."""
    multi_query: bool = Field(False, validation_alias=AliasChoices("multi_query", "ragMultiQueryMode"))
    """In mode auto, always run the multi-query pass (query variants fused in one SQL call) instead of
    checking retrieval first."""
    candidates: PositiveInt = 50
    """How many candidates each leg of a search (meaning and words) returns before a hybrid pass fuses
    them."""
    match_count: PositiveInt = 20
    """Passages a search pass keeps for ranking."""
    # rag.retrieval.facets
    facet_split: bool = False
    """Search a question that joins topics ("A and B") whole and by each facet, fused by rank."""
    # fusion weights (rag.retrieval.rank): fused = w_cosine·vector + w_bm25·lexical + w_freshness·freshness + w_metadata·boost
    # (the defaults are the chat profile's, chosen on BEIR train/dev qrels: see BUILTIN_PROFILES)
    w_bm25: NonNegativeFloat = 0.30
    """Weight of the word (BM25) score in a passage's score."""
    w_cosine: NonNegativeFloat = 0.60
    """Weight of the meaning (cosine similarity) score in a passage's score."""
    w_freshness: NonNegativeFloat = 0.10
    """Weight of freshness (from the note's date, halving every freshness_half_life_days) in a passage's
    score."""
    w_metadata: NonNegativeFloat = 0.0
    """Weight of the metadata_boost of the passage's type in its score."""
    w_note: NonNegativeFloat = 0.0
    """How much how close the question comes to the passage's note as a whole (its outline and the
    sentences other notes link to it with; rag.retrieval.note_signal) adds to a passage's score, as a
    share of the best score: final + w_note x best final x the note's signal (0..1). 0: not read."""
    note_similarity_floor: float = Field(0.2, ge=-1, le=1)
    """A note vector adds to the note's signal only by how far its similarity to the question is above this."""
    note_inbound_weight: NonNegativeFloat = 0.5
    """How much the inbound vector (the sentences other notes link to the note with) counts in the note's
    signal, beside its outline's 1."""
    # rag.retrieval.passes
    fill_similarity: bool = True
    """Rank a passage only the word search found on its true similarity to the question, not on 0."""
    # With complete scores the ranking does the weighing: a weighted cut had dropped the BM25 leg's finds
    # before they were scored.
    rrf_cut_weights: Literal["equal", "fusion"] = "equal"
    """A hybrid pass keeps match_count candidates by rank fusion in SQL before ranking: the two lists count
    alike ("equal") or as w_cosine : w_bm25 ("fusion")."""
    metadata_boost: dict[str, float] = Field(default_factory=dict)
    """Per document type (front matter `type`), a boost added through w_metadata, e.g. { decision = 1.0 }."""
    # multipliers
    type_weights: dict[str, float] = Field(default_factory=lambda: dict(DEFAULT_TYPE_WEIGHTS))
    """Per document type, a multiplier of the passage's score, e.g. { meeting = 1.2, draft = 0.6 }."""
    unknown_type_weight: NonNegativeFloat = 1.0
    """The multiplier of a type type_weights does not list."""
    persona_weights: dict[str, float] = Field(default_factory=dict)
    """Per persona (front matter `persona`), a multiplier of the passage's score."""
    freshness_half_life_days: PositiveFloat = 365.0
    """Days after which a note's freshness halves."""
    risk_penalty: ZeroToOne = 0.5
    """How much a passage flagged as risky (e.g. an injection phrasing) loses: its score times 1 -
    risk_penalty x its risk, 0 to 1."""
    per_source_cap: PositiveInt = 3
    """The most passages of one note kept in a ranking."""
    # weak-retrieval check (rag.retrieval.autorag.is_weak_retrieval)
    similarity_threshold: float = Field(0.30, ge=-1, le=1)
    """Auto-RAG: retrieval is weak when the best similarity is below this (or too few results pass it)."""
    min_matches: NonNegativeInt = 3
    """Auto-RAG: retrieval is weak with fewer results than this."""
    density_min_share: ZeroToOne = 0.25
    """Auto-RAG: retrieval is weak when less than this share of the results reach similarity_threshold."""
    flat_spread_max: NonNegativeFloat = 0.02
    """Auto-RAG: retrieval is weak when the top similarities differ by less than this (nothing stands out)."""
    # 0.10: at 0.02 and 0.05 one or two pseudo-relevance-feedback rewrites per BEIR set were judged
    # better and were not (NFCorpus nDCG@10 -0.0001..-0.0005 vs base); at 0.10 auto == base on
    # SciFact and NFCorpus for chat and default_research (test splits, bench/compute_context.py).
    decision_margin: NonNegativeFloat = 0.10
    """Auto-RAG: a correction replaces the base pass only when its score beats base by this much."""

    @field_validator(*MAPPING_FIELDS)
    @classmethod
    def _lower_keys_non_negative(cls, value: dict[str, float]) -> dict[str, float]:
        for key, weight in value.items():
            if weight < 0:
                raise ValueError(f"weight for '{key}' must be ≥ 0, got {weight}")
        return {str(k).lower(): float(v) for k, v in value.items()}


_NOTES_BOOST = {"notes": 1.0, "note": 1.0, "policy": 1.0, "decision": 1.0}
_TEMPLATE_BOOST = {"template": 1.0, "templates": 1.0}

BUILTIN_PROFILES: dict[str, Profile] = {
    p.name: p
    for p in (
        # chat (the field defaults): w_cosine 0.60 / w_bm25 0.30, fill_similarity, an equal RRF cut, the best of
        # w_cosine 0.45-0.72 on SciFact's train and NFCorpus' dev qrels, over 0.45 / 0.45 without the fill:
        # nDCG@10 at its 20 matches (bench/compute_context.py --split train|dev, base) 0.7252 -> 0.7366 and
        # 0.3350 -> 0.3364 (a fusion-weighted cut: 0.7225 / 0.3246); at depth 100 (ragpg eval-beir --split
        # train|dev, auto) 0.7304 -> 0.7387 and 0.3361 -> 0.3367.
        Profile(name="chat"),
        # Markdown notes: semantic match first, words second (as in the notes `ask` rerank).
        # Chosen on the golden set's dev split (eval/golden/obsidian-help.yaml, search path, local model):
        # recall@5 0.763 at cosine 0.70 / BM25 0.25 / 20 matches, 0.816 at 0.85 / 0.10 (notes that merely
        # repeat the question's words weigh less), 0.821 with 40 matches from 100 candidates per leg.
        # The fill changed nothing on the golden dev split (recall@5 0.821 either way); an equal cut lost a case.
        # w_note 0.15 (note vectors: the outline, and the inbound link lines at half weight, floor 0.2), chosen
        # on the dev split (docs/quality.md, "Note vectors"): search recall@5 dev 0.821 -> 0.847.
        Profile(name="notes", w_cosine=0.85, w_bm25=0.10, w_freshness=0.05, per_source_cap=4, facet_split=True,
                match_count=40, candidates=100, rrf_cut_weights="fusion", w_note=0.15),
        # BM25-led profiles keep the fusion-weighted cut and no fill: on SciFact train / NFCorpus dev the fill
        # cost default_research 0.7229 -> 0.7194 / 0.3319 -> 0.3297 (0.7177 / 0.3312 with an equal cut).
        Profile(name="default_research", w_bm25=0.60, w_cosine=0.35, w_freshness=0.05, per_source_cap=3,
                fill_similarity=False, rrf_cut_weights="fusion"),
        Profile(name="decisions_recent", w_bm25=0.65, w_cosine=0.20, w_freshness=0.15, w_metadata=0.10,
                metadata_boost=_NOTES_BOOST, freshness_half_life_days=90.0, per_source_cap=4,
                fill_similarity=False, rrf_cut_weights="fusion"),
        Profile(name="templates_lookup", retrieval="lexical", w_bm25=0.90, w_cosine=0.0, w_freshness=0.0,
                w_metadata=0.10, metadata_boost=_TEMPLATE_BOOST, per_source_cap=5),
    )
}


def _error_line(name: str, exc: ValidationError) -> str:
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err.get("loc", ())) or "profile"
    if err.get("type") == "extra_forbidden":
        return f"profile '{name}': unknown key '{where}'"
    return f"profile '{name}': invalid '{where}': {err.get('msg')}"


def build_profile(name: str, table: Mapping[str, Any], base: Profile | None = None) -> Profile:
    """Validate one user table on top of `base` (mapping fields merge key by key)."""
    data: dict[str, Any] = base.model_dump() if base else {}
    for raw_key, value in table.items():
        key = KEY_ALIASES.get(raw_key, raw_key)
        if key in MAPPING_FIELDS and isinstance(value, Mapping) and key in data:
            data[key] = {**data[key], **{str(k).lower(): v for k, v in value.items()}}
        else:
            data[key] = value
    data["name"] = name
    try:
        return Profile.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_error_line(name, exc)) from None


def _resolve(name: str, tables: Mapping[str, Mapping[str, Any]], done: dict[str, Profile],
             visiting: tuple[str, ...]) -> Profile:
    if name in visiting:
        raise ConfigError(f"profile '{name}': circular 'base' chain {' -> '.join((*visiting, name))}")
    table = dict(tables[name])
    base_name = table.pop(BASE_KEY, None)
    if base_name is None:
        base = BUILTIN_PROFILES.get(name)  # a table named like a built-in adjusts it
    elif not isinstance(base_name, str):
        raise ConfigError(f"profile '{name}': 'base' must be a profile name")
    elif base_name in tables and base_name != name:
        base = done.get(base_name) or _resolve(base_name, tables, done, (*visiting, name))
    elif base_name in BUILTIN_PROFILES:
        base = BUILTIN_PROFILES[base_name]
    else:
        known = ", ".join(sorted({*BUILTIN_PROFILES, *tables}))
        raise ConfigError(f"profile '{name}': unknown base '{base_name}' (known: {known})")
    done[name] = build_profile(name, table, base)
    return done[name]


def load_profiles(settings: Any) -> dict[str, Profile]:
    """Built-in profiles plus the user's `[profiles.<name>]` tables from `settings.profiles`."""
    tables: Mapping[str, Any] = getattr(settings, "profiles", None) or {}
    done: dict[str, Profile] = {}
    for name, table in tables.items():
        if not isinstance(table, Mapping):
            raise ConfigError(f"profile '{name}' must be a table of settings")
        if name not in done:
            _resolve(name, tables, done, ())
    return {**BUILTIN_PROFILES, **done}


def get_profile(name: str, profiles: Mapping[str, Profile] | None = None) -> Profile:
    available = BUILTIN_PROFILES if profiles is None else profiles
    try:
        return available[name]
    except KeyError:
        raise NotFoundError(f"unknown profile '{name}' (known: {', '.join(sorted(available))})") from None
