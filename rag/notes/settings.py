"""Tunables of the notes-vault answering workflow (`rag.ask`), with their defaults.

The group lives in `rag.config.Settings` as `notes` (env `RAGPG_NOTES__*`, `[notes]` in the config file).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class NotesSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    # First stage: the SQL match function every folder scope is searched with.
    # "vector" (cosine) or "hybrid" (vector + BM25 fused by reciprocal rank fusion in SQL).
    first_stage: Literal["vector", "hybrid"] = "vector"
    candidates_per_scope: int = Field(15, gt=0, le=1000)
    pool_cap: int = Field(200, gt=0)
    # Floors: a candidate needs vector similarity >= vector_floor, then a final score >= final_floor.
    vector_floor: float = Field(0.3, ge=-1, le=1)
    final_floor: float = Field(0.4, ge=0)
    # Blend: final = (vector_weight * vector + lexical_weight * lexical) * folder position weight.
    vector_weight: float = Field(0.7, ge=0)
    lexical_weight: float = Field(0.3, ge=0)
    # Lexical rerank: min(max_lexical, term matches / chunk tokens * lexical_scale) + heading bonus.
    lexical_scale: float = Field(10.0, ge=0)
    max_lexical: float = Field(0.4, ge=0)
    heading_bonus: float = Field(0.1, ge=0)
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
    # Confidence bands on the best final score.
    confidence_filter_below: float = Field(0.20, ge=0)
    confidence_low_below: float = Field(0.30, ge=0)
    # Answers.
    answer_max_tokens: int = Field(800, gt=0)
    folder_rank_max_tokens: int = Field(300, gt=0)
    extractive_max_sentences: int = Field(4, gt=0)
    extractive_top_chunks: int = Field(3, gt=0)
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
        if self.confidence_filter_below > self.confidence_low_below:
            raise ValueError("confidence_filter_below must not exceed confidence_low_below")
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
