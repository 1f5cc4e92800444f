"""Denylist globs matched in linear time.

A glob compiled to a backtracking regex (`**` → `.*`, `*` → `[^/]*`) takes time exponential in the
number of stars on a path that almost matches: a pattern with several `**` took 35 s for one
path. Here a pattern is a list of tokens and matching runs them as an NFA over the text, keeping
the set of live token positions: O(len(pattern) × len(text)) whatever the pattern.

Tokens: a literal character; `?` (one character but "/"); `*` (any run without "/"); `**` (any
run, "/" included); `**/` (nothing, or any run ending in "/"); `[...]`/`[!...]` (one character
of a class, never "/").
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

LITERAL, ONE, STAR, GLOBSTAR, GLOBSTAR_DIR, CLASS = range(6)


@dataclass(frozen=True)
class Token:
    kind: int
    char: str = ""
    klass: Callable[[str], object] | None = None

    def accepts(self, ch: str) -> bool:
        """Whether the token consumes `ch` (for the repeating kinds: one more character of the run)."""
        if self.kind == LITERAL:
            return ch == self.char
        if self.kind in (ONE, STAR):
            return ch != "/"
        if self.kind in (GLOBSTAR, GLOBSTAR_DIR):
            return True
        return ch != "/" and self.klass is not None and self.klass(ch) is not None


@lru_cache(maxsize=256)
def compile_glob(pattern: str) -> tuple[Token, ...]:
    tokens: list[Token] = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            tokens.append(Token(GLOBSTAR_DIR))
            i += 3
        elif pattern.startswith("**", i):
            tokens.append(Token(GLOBSTAR))
            i += 2
        elif pattern[i] == "*":
            tokens.append(Token(STAR))
            i += 1
        elif pattern[i] == "?":
            tokens.append(Token(ONE))
            i += 1
        elif pattern[i] == "[" and (end := pattern.find("]", i + 2)) != -1:
            body = pattern[i + 1 : end]
            body = "^" + body[1:] if body.startswith("!") else body
            tokens.append(Token(CLASS, klass=re.compile("[" + body.replace("\\", "\\\\") + "]").fullmatch))
            i = end + 1
        else:
            tokens.append(Token(LITERAL, pattern[i]))
            i += 1
    return tuple(tokens)


def glob_match(tokens: tuple[Token, ...], text: str) -> bool:
    """Whether `tokens` match all of `text`.

    A state is (token position, inside): `inside` marks a `**/` run that has consumed characters
    and may now end only with a "/" (before its first character it may also match nothing)."""
    states = _closure(tokens, {(0, False)})
    for ch in text:
        step: set[tuple[int, bool]] = set()
        for s, _started in states:  # a started run reads like an unstarted one
            if s == len(tokens) or not tokens[s].accepts(ch):
                continue
            kind = tokens[s].kind
            if kind == GLOBSTAR_DIR:
                step.add((s, True))
                if ch == "/":
                    step.add((s + 1, False))
            elif kind in (STAR, GLOBSTAR):
                step.add((s, False))
            else:
                step.add((s + 1, False))
        if not step:
            return False
        states = _closure(tokens, step)
    return (len(tokens), False) in states


def _closure(tokens: tuple[Token, ...], states: set[tuple[int, bool]]) -> set[tuple[int, bool]]:
    """Add the positions reachable without reading: a repeating token that has not started may match
    nothing (a started `**/` run must still end in "/")."""
    out = set(states)
    todo = list(states)
    while todo:
        s, inside = todo.pop()
        if (not inside and s < len(tokens) and tokens[s].kind in (STAR, GLOBSTAR, GLOBSTAR_DIR)
                and (s + 1, False) not in out):
            out.add((s + 1, False))
            todo.append((s + 1, False))
    return out
