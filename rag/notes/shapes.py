"""What an answer to a question looks like (its shape), read from the question's form.

"How long ...", "how far back ...", "within how many days ..." want a duration; "how much ..." an
amount; "which key ..." a key combination; "where is the setting ..." a setting path; "how do I ..."
steps. A sentence holding a fact of that shape outranks a general sentence on the same topic
(`rag.notes.extractive.favour_shape`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_UNIT = r"(?:second|minute|hour|day|week|month|year)s?"
_DURATION = re.compile(rf"\b\d+(?:[.,]\d+)?[\s-]*{_UNIT}\b|\b(?:one|two|three|four|five|six|seven|ten|twelve|thirty)"
                       rf"[\s-]+{_UNIT}\b", re.IGNORECASE)
_AMOUNT = re.compile(r"[$€£¥]\s?\d|\b\d+(?:[.,]\d+)?\s?(?:USD|EUR|dollars?|euros?|%|percent)\b"
                     r"|\b\d+(?:[.,]\d+)?\s?(?:KB|MB|GB|TB)\b", re.IGNORECASE)
_NUMBER = re.compile(r"\b\d+(?:[.,]\d+)?\b")
_KEYS = re.compile(r"\b(?:Ctrl|Cmd|Shift|Alt|Option|Opt|Mod|Meta|Tab|Enter|Esc)\b\s*\+|\+\s*\b(?:Enter|Tab|Space)\b",
                   re.IGNORECASE)
_SETTING = re.compile(r"\w\s*(?:→|->|>)\s*\w")

# question form -> the shape of its answer (first match wins)
_FORMS: tuple[tuple[str, re.Pattern[str], re.Pattern[str]], ...] = (
    ("key combination", re.compile(r"\b(?:which|what) (?:key|keys|shortcut|hotkey|key combination)\b|"
                                   r"\bkeyboard shortcut\b|\bkey combination\b", re.IGNORECASE), _KEYS),
    ("duration", re.compile(r"\bhow (?:long|far back|soon|often)\b|\b(?:a few|how many|several) "
                            rf"{_UNIT}\b|\bretain|\bkept\b|\bexpire", re.IGNORECASE), _DURATION),
    ("amount", re.compile(r"\bhow (?:much|big|large)\b|\b(?:price|cost|storage|size|limit|allowance)\b",
                          re.IGNORECASE), _AMOUNT),
    ("number", re.compile(r"\bhow many\b|\bmaximum\b|\bup to\b", re.IGNORECASE), _NUMBER),
    ("setting path", re.compile(r"\b(?:setting|settings|option|toggle|turn (?:on|off)|enable|disable)\b",
                                re.IGNORECASE), _SETTING),
)


@dataclass(frozen=True)
class Shape:
    name: str
    pattern: re.Pattern[str]

    def holds(self, sentence: str) -> bool:
        return bool(self.pattern.search(sentence))


def answer_shape(question: str) -> Shape | None:
    """The shape of the answer the question's form asks for, or None (a general question)."""
    for name, form, pattern in _FORMS:
        if form.search(question):
            return Shape(name, pattern)
    return None


_HOW_TO = re.compile(r"^\s*(?:how (?:do|can|should) (?:i|you|we)|how to|what are the steps|walk me through)\b",
                     re.IGNORECASE)


def asks_for_steps(question: str) -> bool:
    """A how-to question: its answer is a procedure, quoted as steps in order."""
    return bool(_HOW_TO.search(question))
