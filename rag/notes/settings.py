"""Tunables of the notes-vault answering workflow (`rag.ask`), with their defaults.

The group lives in `rag.config.Settings` as `notes` (env `RAGPG_NOTES__*`, `[notes]` in the config file).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

# Fitted on the golden set's dev split only (`python eval/fit_abstention.py eval/golden/obsidian-help.yaml
# --signals term_coverage,unknown_share,passage_coverage`, local model): the signal subset scored best
# in 5-fold cross-validation on dev; signals left out weigh 0. Refit after changing retrieval or ranking.
ABSTAIN_WEIGHTS: dict[str, float] = {"term_coverage": 2.575, "unknown_share": -4.444, "passage_coverage": -2.681}
ABSTAIN_BIAS = 2.011
ABSTAIN_THRESHOLD = 0.69
ABSTAIN_LOW_CONFIDENCE = 0.8


class NotesSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    # The notes workflow runs the shared pipeline (rag.retrieval.stage → rag.retrieval.rank) with this profile.
    profile: str = "notes"
    # Folder prior: the folder at position i of the selection (user, LLM or centroid order) weighs
    # w_i = max(1.0 - i * step, min); a candidate's final score is multiplied by
    # (1 - folder_prior_weight) + folder_prior_weight * w_i. Every folder is searched either way.
    folder_prior_weight: float = Field(0.0, ge=0, le=1)
    # Same, when an LLM ranked the folders (it reads folder names, which centroids do not).
    folder_prior_weight_llm: float = Field(0.3, ge=0, le=1)
    # Folder position weights: 1.0, 1.0 - step, ... never below folder_weight_min.
    folder_weight_step: float = Field(0.1, ge=0)
    folder_weight_min: float = Field(0.1, ge=0, le=1)
    # K: the number of notes passages an answer draws on.
    k_min: int = Field(3, gt=0)
    k_max: int = Field(8, gt=0)
    k_brief: int = Field(3, gt=0)
    k_normal: int = Field(5, gt=0)
    k_detailed: int = Field(8, gt=0)
    breadth_bonus: int = Field(2, ge=0)
    breadth_min_words: int = Field(20, gt=0)  # a question longer than this many words is broad
    breadth_min_question_marks: int = Field(2, gt=0)
    breadth_words: tuple[str, ...] = ("overview", "everything", "all", "compare", "comparison", "summarize",
                                      "summary")
    folder_filter_k_delta: int = -1  # the user named folders: a narrower question
    # Abstention (rag.notes.abstain): p(answerable) = logistic(bias + sum weight * signal); abstain
    # below the threshold; "low" confidence below abstain_low_confidence. Fitted on the golden
    # set's dev split by `python eval/fit_abstention.py`.
    abstain_weights: dict[str, float] = Field(default_factory=lambda: dict(ABSTAIN_WEIGHTS))
    abstain_bias: float = ABSTAIN_BIAS
    abstain_threshold: float = Field(ABSTAIN_THRESHOLD, ge=0, le=1)
    abstain_low_confidence: float = Field(ABSTAIN_LOW_CONFIDENCE, ge=0, le=1)
    abstain_top_passages: int = Field(3, gt=0)
    # Answers.
    answer_max_tokens: int = Field(800, gt=0)
    folder_rank_max_tokens: int = Field(300, gt=0)
    # Sentences quoted without an LLM, and sources listed, per detail hint.
    answer_sentences: dict[str, int] = Field(default_factory=lambda: {"brief": 1, "normal": 2, "detailed": 3})
    answer_sources: dict[str, int] = Field(default_factory=lambda: {"brief": 1, "normal": 3, "detailed": 8})
    # A sentence's score: (1 - w) * weighted share of question terms + w * embedding similarity to the question.
    extractive_semantic_weight: float = Field(0.5, ge=0, le=1)
    extractive_min_share_of_best: float = Field(0.5, ge=0, le=1)  # quote sentences scoring >= this x the best
    snippet_chars: int = Field(280, gt=20)
    search_k_max: int = Field(100, gt=0)
    search_min_score: float = 0.0  # search lists only passages scoring above this (no floors otherwise)

    @model_validator(mode="after")
    def _consistent(self) -> NotesSettings:
        if self.k_min > self.k_max:
            raise ValueError(f"k_min ({self.k_min}) must not exceed k_max ({self.k_max})")
        if self.abstain_low_confidence < self.abstain_threshold:
            raise ValueError("abstain_low_confidence must not be below abstain_threshold")
        for name, table in (("answer_sentences", self.answer_sentences), ("answer_sources", self.answer_sources)):
            if set(table) != {"brief", "normal", "detailed"} or min(table.values()) < 1:
                raise ValueError(f"{name} needs brief, normal and detailed, each at least 1")
        return self


def notes_settings(settings: Any) -> NotesSettings:
    """The notes group of a `rag.config.Settings` (once it has one), else the defaults."""
    group = getattr(settings, "notes", None)
    if isinstance(group, NotesSettings):
        return group
    if isinstance(group, BaseModel):
        return NotesSettings.model_validate(group.model_dump())
    if isinstance(group, dict):
        return NotesSettings.model_validate(group)
    return NotesSettings()
