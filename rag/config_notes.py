"""The `[notes]` settings group: how `ragpg ask` and `ragpg search` (`rag.ask`, `rag.search`) answer
from a vault of notes. Every field has a description (the docstring under it) that `ragpg config show`
and `ragpg config init` print; comments keep the measurements behind a default."""

from __future__ import annotations

from pydantic import Field, NonNegativeFloat, NonNegativeInt, PositiveInt, model_validator

from rag.config_groups import Group, ZeroToOne

# Fitted on the golden set's dev split only (`python eval/fit_abstention.py eval/golden/obsidian-help.yaml
# --cv --portable --max-wrong 0.05`, local model): of the signals that do not depend on the embedder's
# cosine scale (rag.notes.signals.PORTABLE_SIGNALS), the subset of up to three that scored best in 5-fold
# cross-validation on dev, and the threshold that abstains most while wrongly abstaining on at most 5 % of
# dev's answerable questions; signals left out weigh 0. Refit after changing retrieval, ranking or signals.
# Refit 2026-11-28: the fit before (term_coverage / unknown_share / passage_coverage) dated from 2026-11-24,
# before the names_missing signal and later retrieval changes. CV on dev: abstained 0.580, wrongly 0.042;
# the fitted model alone on dev 0.600 / 0.032 and on test (scored, never fitted) 0.550 / 0.062.
# The signals the abstention model can weigh (rag.notes.signals.AbstainSignals has one field each).
ABSTAIN_SIGNALS: tuple[str, ...] = ("top_final", "margin", "top_similarity", "sentence_similarity", "term_coverage",
                                    "unknown_share", "leg_agreement", "top_bm25", "rarest_missing",
                                    "passage_coverage", "names_missing")
ABSTAIN_WEIGHTS: dict[str, float] = {"term_coverage": 1.574, "unknown_share": -3.615, "names_missing": -3.724}
ABSTAIN_BIAS = 1.888
ABSTAIN_THRESHOLD = 0.72
ABSTAIN_LOW_CONFIDENCE = 0.8


class NotesSettings(Group):
    """Tunables of the notes-vault answering workflow (`rag.ask`, `rag.notes`)."""

    profile: str = "notes"
    """The retrieval profile `ask` and `search` rank with (a built-in or one of your [profiles.NAME])."""
    folder_prior_weight: ZeroToOne = 0.0
    """How much the order of the folders a question is likely about (by their centroids) weighs on the
    scores, 0 to 1: the folder at position i weighs w_i (see notes.folder_weight_step) and a score is
    multiplied by (1 - weight) + weight * w_i. Every folder is searched either way. 0: folder order does
    not count."""
    folder_prior_weight_llm: ZeroToOne = 0.3
    """The same weight when an LLM ranked the folders (it reads folder names, which centroids do not)."""
    folder_weight_step: NonNegativeFloat = 0.1
    """Folder position weights for that prior: 1.0 for the first folder, 1.0 - step for the second, and so
    on."""
    folder_weight_min: ZeroToOne = 0.1
    """A folder's position weight never falls below this."""
    k_min: PositiveInt = 3
    """The fewest passages an answer draws on: an explicit --k or an automatic choice is raised to it."""
    k_max: PositiveInt = 8
    """The most passages an answer draws on: an explicit --k or an automatic choice is lowered to it."""
    k_brief: PositiveInt = 3
    """Passages an answer draws on for --detail brief (before the adjustments below)."""
    k_normal: PositiveInt = 5
    """Passages an answer draws on for --detail normal (the default detail)."""
    k_detailed: PositiveInt = 8
    """Passages an answer draws on for --detail detailed."""
    breadth_bonus: NonNegativeInt = 2
    """Extra passages for a broad question (a long one, several question marks, or a word of
    notes.breadth_words)."""
    breadth_min_words: PositiveInt = 20
    """A question of more than this many words is broad."""
    breadth_min_question_marks: PositiveInt = 2
    """A question with at least this many question marks is broad."""
    breadth_words: tuple[str, ...] = ("overview", "everything", "all", "compare", "comparison", "summarize",
                                      "summary")
    """Words that make a question broad."""
    folder_filter_k_delta: int = -1
    """Passages added (negative: removed) when you name folders with --folder: a narrower question."""
    abstain_weights: dict[str, float] = Field(default_factory=lambda: dict(ABSTAIN_WEIGHTS))
    """The abstention model: p(answerable) = logistic(bias + sum of weight x signal) over the signals of
    rag.notes.signals (term_coverage, unknown_share, passage_coverage, ...); a signal left out weighs 0.
    Fitted on the golden set's dev split (eval/fit_abstention.py); refit after changing retrieval or
    ranking."""
    abstain_bias: float = ABSTAIN_BIAS
    """The abstention model's bias (see notes.abstain_weights)."""
    abstain_threshold: ZeroToOne = ABSTAIN_THRESHOLD
    """`ask` answers "could not find this" when p(answerable) is below this, 0 to 1. Higher abstains more
    often, also on questions your notes do answer."""
    abstain_low_confidence: ZeroToOne = ABSTAIN_LOW_CONFIDENCE
    """An answer with p(answerable) below this is marked low confidence; not below notes.abstain_threshold."""
    abstain_top_passages: PositiveInt = 3
    """How many of the best passages the abstention signals read."""
    # golden dev split, local model: 10 passages find a name the best 5 miss ("PDFs" in the 7th); 20 also
    # find the notes' passing mentions of names they do not cover ("Chrome" among a list of browsers)
    names_top_passages: PositiveInt = 10
    """`ask` abstains when the question asks about a name or number (YubiKey, Joplin, 500) that none of this
    many best passages of the evidence vault mention, and says which: "Your notes mention X but not Y". A
    name after on/in/at ("on my PC") only sets the scene and is not required."""
    answer_max_tokens: PositiveInt = 800
    """The longest answer an LLM may write, in tokens."""
    answer_context_budget_tokens: PositiveInt = 6000
    """Tokens of notes the LLM answer is given at most: the passages drawn on, assembled like any context
    under their [File: ..., Section: ...] lines; lower-ranked passages that do not fit are left out."""
    folder_rank_max_tokens: PositiveInt = 300
    """The longest reply an LLM may give when it ranks the folders a question is about, in tokens."""
    answer_sentences: dict[str, int] = Field(default_factory=lambda: {"brief": 1, "normal": 2, "detailed": 3})
    """Sentences a quoted answer (no LLM) holds, per --detail: brief, normal and detailed, each at least 1."""
    answer_sources: dict[str, int] = Field(default_factory=lambda: {"brief": 1, "normal": 3, "detailed": 8})
    """Sources an answer lists, per --detail: brief, normal and detailed, each at least 1."""
    extractive_semantic_weight: ZeroToOne = 0.5
    """How a quoted answer picks its sentences, 0 to 1: a sentence scores (1 - w) x the weighted share of
    the question's words it holds + w x its embedding similarity to the question."""
    extractive_min_share_of_best: ZeroToOne = 0.5
    """A quoted answer holds only sentences scoring at least this share of the best sentence's score."""
    # golden set, local model, no LLM: answer_fact dev 0.432 -> 0.463 (tuned on), test 0.371 -> 0.392;
    # it costs 36-39 ms of a ~290 ms ask p50 (bench/ask_latency.py --compare-sentence-context)
    extractive_sentence_context: bool = True
    """Embed each candidate sentence after its note's title and section ("Obsidian Headless Install: ..."),
    so a sentence that does not repeat its topic is still found. false: a little faster, less accurate."""
    # 12 on the golden dev split (with FAQ prompts answered by what follows them, numbered steps kept with
    # their introduction and table rows read as sentences, a sentence saying "This ..." after the one
    # before it): answer_fact 0.379 -> 0.432
    extractive_short_sentence_words: NonNegativeInt = 12
    """A quoted sentence shorter than this many words brings the next sentence of its passage along (a
    question followed by its answer, a step after its introduction). 0: never."""
    question_part_min_terms: int = Field(2, ge=1)
    """A question asks several things when it splits (", and what ...", "? Can ...") into parts of at
    least this many content words each; a quoted answer then brings forward the best sentence of each part."""
    extractive_shape_min_share: ZeroToOne = 0.5
    """A quoted answer puts first the sentences holding a fact of the shape the question asks for (a duration
    for "how long", a key combination for "which key", steps for "how do I") that score at least this share
    of the best sentence. 1: only the best sentence itself."""
    steps_max_items: NonNegativeInt = 8
    """A quoted answer to a how-to question ("How do I ...?") whose best sentence comes from a numbered or
    bulleted list (a step, or the sentence ending in ':' that introduces it) quotes that sentence and the
    steps in order, one line each, at most this many; a longer list ends with "…". 0: never."""
    steps_max_chars: int = Field(800, gt=20)
    """The most characters of step text such an answer quotes; the steps past it are cut with "…"."""
    snippet_chars: int = Field(280, gt=20)
    """Length of the passage excerpt shown with a source or a search result, in characters."""
    search_k_max: PositiveInt = 100
    """The most results `ragpg search --k` may ask for."""
    related_k: int = Field(10, gt=0, le=1000)
    """How many related notes `ragpg related` (and GET /v1/related, the related_notes tool) lists by default:
    the notes linked either way first, then the closest in meaning."""
    search_min_score: float = 0.0
    """`search` lists only passages whose final score is above this."""
    search_floor_similarity: float = Field(0.40, ge=-1, le=1)
    """A search whose words the notes never use finds nothing unless a passage comes at least this close in
    meaning (cosine similarity). Chosen on the golden dev split: above every no-word, no-meaning probe
    (keyboard runs, made-up words, bare numbers: at most 0.377 with the local model); no dev question that
    the notes answer lacks a word of the notes."""
    search_passages_per_note: int = Field(3, ge=1, le=20)
    """A search by note (the default) shows at most this many passages under each note, best first."""

    @model_validator(mode="after")
    def _consistent(self) -> NotesSettings:
        if self.k_min > self.k_max:
            raise ValueError(f"k_min ({self.k_min}) must not exceed k_max ({self.k_max})")
        unknown = sorted(set(self.abstain_weights) - set(ABSTAIN_SIGNALS))
        if unknown:  # a misspelt signal would weigh 0 without a word
            raise ValueError(f"abstain_weights: unknown signal '{unknown[0]}' (known: {', '.join(ABSTAIN_SIGNALS)})")
        if self.abstain_low_confidence < self.abstain_threshold:
            raise ValueError("abstain_low_confidence must not be below abstain_threshold")
        for name, table in (("answer_sentences", self.answer_sentences), ("answer_sources", self.answer_sources)):
            if set(table) != {"brief", "normal", "detailed"} or min(table.values()) < 1:
                raise ValueError(f"{name} needs brief, normal and detailed, each at least 1")
        return self
