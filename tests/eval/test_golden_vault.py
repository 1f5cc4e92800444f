"""The shipped golden set over the Obsidian help vault: valid, every path real, questions fair.

"Fair" means a question does not reuse the title words of its must-include files, so a system
cannot score by matching file names: a question word counts as a reuse when one word is a
prefix of the other after a light plural stem ("sync" ~ "syncing", "aliases" ~ "alias").
Stopwords, words of three letters or fewer, and the words every page of this vault shares
("obsidian", "note(s)") are ignored.
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath

import pytest

from rag.eval import GoldenCase, GoldenSet, load_golden

REPO = Path(__file__).resolve().parents[2]
GOLDEN_PATH = REPO / "eval" / "golden" / "obsidian-help.yaml"
VAULT = REPO.parent / "shared" / "data" / "obsidian-help"

MIN_CASES, MIN_MULTI_FILE, MIN_FOLDER_SCOPED, MIN_ABSTAIN = 35, 8, 8, 6
MIN_WORD_LENGTH = 4
STOPWORDS = frozenset(
    "about after also and are can does for from have how into its not that the their then there this "
    "those through using what when where which while who why will with without your you "
    "obsidian note notes".split()
)
_PLURALS = (("ss", "ss"), ("ies", "y"), ("ses", "s"), ("xes", "x"), ("s", ""))  # "ss": headless, across


@pytest.fixture(scope="module")
def golden() -> GoldenSet:
    return load_golden(GOLDEN_PATH)


def _stem(word: str) -> str:
    for suffix, replacement in _PLURALS:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)] + replacement
    return word


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in STOPWORDS}


def title_words(source_path: str) -> set[str]:
    return {_stem(w) for w in _words(PurePosixPath(source_path).stem) if len(w) >= MIN_WORD_LENGTH}


def reused_title_words(case: GoldenCase) -> set[str]:
    titles = set().union(*(title_words(p) for p in case.must_include_source_paths))
    return {
        f"{word}~{t}" for word in _words(case.query) for t in titles
        if _stem(word).startswith(t) or (len(_stem(word)) >= MIN_WORD_LENGTH and t.startswith(_stem(word)))
    }


def test_title_word_check_catches_reuse() -> None:
    def reuse(query: str, path: str) -> set[str]:
        return reused_title_words(GoldenCase(id="x", query=query, index=1, must_include_source_paths=(path,)))

    assert reuse("How does syncing work?", "Obsidian Sync/Introduction to Obsidian Sync.md") == {"syncing~sync"}
    assert reuse("Give a page an alias", "Linking notes and files/Aliases.md") == {"alias~alias"}
    assert reuse("can my notes stay the same on my phone and laptop without copying them?",
                 "Obsidian Sync/Introduction to Obsidian Sync.md") == set()


def test_golden_set_shape(golden: GoldenSet) -> None:
    cases = golden.cases
    assert len(cases) >= MIN_CASES
    assert sum(len(c.must_include_source_paths) >= 2 for c in cases) >= MIN_MULTI_FILE
    assert sum(bool(c.folders) for c in cases) >= MIN_FOLDER_SCOPED
    assert sum(c.expect_abstain for c in cases) >= MIN_ABSTAIN
    assert all(c.must_include_source_paths for c in cases if not c.expect_abstain)


def test_folder_scoped_cases_expect_sources_inside_their_folder(golden: GoldenSet) -> None:
    for case in golden.cases:
        for path in case.must_include_source_paths + case.acceptable_source_paths if case.folders else ():
            assert any(path.startswith(f"{folder}/") for folder in case.folders), f"{case.id}: {path}"


def test_questions_avoid_their_targets_title_words(golden: GoldenSet) -> None:
    offenders = {case.id: reused_title_words(case) for case in golden.cases if reused_title_words(case)}
    assert offenders == {}


@pytest.mark.skipif(not VAULT.is_dir(), reason=f"the Obsidian help vault is not at {VAULT} (shared/data absent)")
def test_every_referenced_path_exists_in_the_vault(golden: GoldenSet) -> None:
    missing = [
        f"{case.id}: {path}"
        for case in golden.cases
        for path in case.must_include_source_paths + case.acceptable_source_paths
        if not (VAULT / path).is_file()
    ]
    assert missing == []
    folders = {folder for case in golden.cases for folder in case.folders}
    assert all((VAULT / folder).is_dir() for folder in folders), folders
