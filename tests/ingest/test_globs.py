"""Item 16: denylist globs match in linear time, with the same answers as the regex translation."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rag.ingest.globs import Token, compile_glob, glob_match


def regex_reference(pat: str) -> re.Pattern[str]:
    """The previous translation (exponential on hostile input, fine on small ones)."""
    out, i = [], 0
    while i < len(pat):
        if pat.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pat.startswith("**", i):
            out.append(".*")
            i += 2
        elif pat[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pat[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pat[i]))
            i += 1
    return re.compile("".join(out), re.DOTALL)


@settings(max_examples=500, deadline=None)
@given(st.text("ab/*?", max_size=9), st.text("ab/", max_size=10))
def test_same_answers_as_the_regex(pattern: str, text: str) -> None:
    assert glob_match(compile_glob(pattern), text) == bool(regex_reference(pattern).fullmatch(text))


def test_many_globstars_are_linear(monkeypatch: pytest.MonkeyPatch) -> None:
    """The work, not the wall time: character tests stay within O(len(pattern) x len(text))
    (a backtracking matcher needs exponentially many on this input)."""
    pattern = "**a" * 12 + "**b"
    text = "a/" * 2000 + "c"
    tokens = compile_glob(pattern)
    calls = 0
    accepts = Token.accepts

    def counted(self: Token, ch: str) -> bool:
        nonlocal calls
        calls += 1
        return accepts(self, ch)

    monkeypatch.setattr(Token, "accepts", counted)
    assert not glob_match(tokens, text)
    assert glob_match(tokens, text[:-1] + "b")
    assert 0 < calls <= 2 * (len(tokens) + 1) * (len(text) + 1)
    assert glob_match(compile_glob("*a*a*a*a*a*a*b"), "a" * 5000 + "b")
    assert not glob_match(compile_glob("*a*a*a*a*a*a*b"), "a" * 5000)
