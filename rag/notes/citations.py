"""The one citation of a notes answer: `[File: name.md, Section: last heading]`.

A passage's label is its file's name and the last heading above it (`(top of the note)` above the
first heading). The quoted answer cites each sentence with its passage's label; the LLM prompt shows
each block of the context (`rag.context.assemble`, one `Citation` per block) under the label of its
first passage, and the answer's citations are read back by comparing them with the labels shown.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from rag.context.assemble import Citation
from rag.notes.ask_trace import CitationTrace
from rag.notes.format import file_name, heading_parts
from rag.types import Candidate

TOP_OF_NOTE = "(top of the note)"
# Anything the answer wrote in the citation form: compared with the labels shown, never parsed further.
_CITED = re.compile(r"\[File:[^\]\n]*\]", re.IGNORECASE)


def cite_label(source_path: str, heading_path: str) -> str:
    parts = heading_parts(heading_path)
    return f"[File: {file_name(source_path)}, Section: {parts[-1] if parts else TOP_OF_NOTE}]"


def citation_for(c: Candidate) -> str:
    """The label of one passage."""
    return cite_label(c.source_path, c.heading_path)


def file_section_header(cit: Citation) -> str:
    """A context block's first line in the notes prompt: the label the answer is to cite it by."""
    return cite_label(cit.source_path, cit.heading_path)


def _folded(text: str) -> str:
    return " ".join(text.split()).casefold()


@dataclass
class CitationMatch:
    """Which passages (indexes into the list shown to the model) the answer's citations point at."""

    used: list[int] = field(default_factory=list)
    unmatched: list[str] = field(default_factory=list)
    by_file_only: list[str] = field(default_factory=list)

    def trace(self) -> CitationTrace:
        return CitationTrace(matched_chunks=[i + 1 for i in self.used], unmatched_citations=self.unmatched,
                             matched_by_file_only=self.by_file_only)


def match_citations(answer: str, passages: Sequence[Candidate]) -> CitationMatch:
    """The passages each citation of `answer` names, in the order the answer cites them.

    A citation equal to a passage's label (case and spacing aside) names that passage; one that names
    a file shown under another section (the model paraphrased the heading) names every passage of
    that file; one naming no file shown is listed in `unmatched`.
    """
    labels = [_folded(citation_for(p)) for p in passages]
    files = [_folded(f"[File: {file_name(p.source_path)},") for p in passages]
    result = CitationMatch()
    for cited in dict.fromkeys(_CITED.findall(answer)):
        folded = _folded(cited)
        hits = [i for i, label in enumerate(labels) if label == folded]
        if not hits:
            hits = [i for i, prefix in enumerate(files) if folded.startswith(prefix) or folded == prefix[:-1] + "]"]
            (result.by_file_only if hits else result.unmatched).append(cited)
        result.used += [i for i in hits if i not in result.used]
    return result


def without_citations(answer: str) -> str:
    """The answer's own words: every `[File: ..., Section: ...]` label taken out."""
    return _CITED.sub(" ", answer)


def numbered(answer: str, labels: Sequence[str]) -> str:
    """The answer with each `[File: ..., Section: ...]` replaced by `[n]`, the 1-based position of the
    same label in `labels` (the Sources list), else of the first label of the same file (a model that
    paraphrased the section, read back the way `match_citations` reads it); a citation of no listed
    file is left as written."""
    folded = [_folded(label) for label in labels]
    files = [label.split(",", 1)[0] + "," for label in folded]

    def number(m: re.Match[str]) -> str:
        cited = _folded(m.group())
        if cited in folded:
            return f"[{folded.index(cited) + 1}]"
        same_file = [i for i, prefix in enumerate(files) if cited.startswith(prefix) or cited == prefix[:-1] + "]"]
        return f"[{same_file[0] + 1}]" if same_file else m.group()

    return _CITED.sub(number, answer)
