"""Token counting: real cl100k_base counts, loaded offline from a ragpg cache dir."""

from __future__ import annotations

import logging
import math
import os
from pathlib import Path

import pytest
import tiktoken
import tiktoken.load
import tiktoken.registry
from hypothesis import given, settings
from hypothesis import strategies as st

from rag import tokens
from rag.errors import InputError
from rag.tokens import cache_key, count_tokens, tokenizer, truncate_to_tokens


@pytest.fixture
def fresh_tokenizer(monkeypatch):
    """Forget the loaded encoding (ours and tiktoken's) for the test, and again afterwards."""
    tokenizer.cache_clear()
    monkeypatch.delitem(tiktoken.registry.ENCODINGS, tokens.ENCODING_NAME, raising=False)
    monkeypatch.delenv("TIKTOKEN_CACHE_DIR", raising=False)  # importing litellm sets it process-wide
    yield
    tokenizer.cache_clear()


def test_known_counts():
    assert count_tokens("") == 0
    assert count_tokens("hello world") == 2
    assert count_tokens("tiktoken is great!") == 6
    assert tokenizer().backend == "tiktoken"


def test_special_token_text_is_counted_not_rejected():
    assert count_tokens("before <|endoftext|> after") > 3


def test_truncate_to_tokens():
    text = "héllo wörld ünïcode tèxt " * 20
    for n in (0, 1, 3, 7, 50):
        cut = truncate_to_tokens(text, n)
        assert text.startswith(cut)
        assert count_tokens(cut) <= n
    assert truncate_to_tokens(text, 10_000) == text
    with pytest.raises(InputError):
        truncate_to_tokens(text, -1)


def test_cache_key_is_tiktokens_file_name():
    assert cache_key() == "9b5ad71b2ce5302211f9c61530b329a4922fc6a4"


def test_loads_offline_from_a_ragpg_cache_dir(fresh_tokenizer, monkeypatch, tmp_path):
    empty_user_cache = tmp_path / "user-tiktoken-cache"
    empty_user_cache.mkdir()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(empty_user_cache))
    for var in ("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy"):
        monkeypatch.setenv(var, "http://127.0.0.1:9")

    def no_download(blobpath: str) -> bytes:
        raise AssertionError(f"tiktoken tried to fetch {blobpath}")

    monkeypatch.setattr(tiktoken.load, "read_file", no_download)
    tok = tokenizer()
    assert tok.backend == "tiktoken"
    assert tok.cache_dir == tmp_path / "xdg" / "ragpg" / "tiktoken"
    assert (tok.cache_dir / cache_key()).is_file()
    assert count_tokens("hello world") == 2
    assert os.environ["TIKTOKEN_CACHE_DIR"] == str(empty_user_cache)  # the caller's setting is restored
    assert list(empty_user_cache.iterdir()) == []


def test_a_valid_cached_copy_is_reused_without_a_source(fresh_tokenizer, monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    first = tokenizer()
    tokenizer.cache_clear()
    monkeypatch.delitem(tiktoken.registry.ENCODINGS, tokens.ENCODING_NAME, raising=False)
    monkeypatch.setattr(tokens, "_source_dirs", lambda: iter(()))
    assert tokenizer().cache_dir == first.cache_dir


def test_a_corrupt_cached_copy_is_replaced(fresh_tokenizer, monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    target = tmp_path / "xdg" / "ragpg" / "tiktoken"
    target.mkdir(parents=True)
    (target / cache_key()).write_bytes(b"garbage")
    assert tokenizer().backend == "tiktoken"
    assert (target / cache_key()).stat().st_size > 1_000_000


def test_falls_back_to_an_estimate_and_logs_once(fresh_tokenizer, monkeypatch, tmp_path, caplog):
    monkeypatch.setattr(tokens, "_source_dirs", lambda: iter(()))
    monkeypatch.setattr(tokens, "_target_dirs", lambda: iter([Path(tmp_path / "empty")]))
    with caplog.at_level(logging.WARNING, logger="rag.tokens"):
        assert count_tokens("abcdefghij") == math.ceil(10 / 4)
        assert count_tokens("ü" * 3) == math.ceil(6 / 4)
        assert truncate_to_tokens("abcdefghij", 1) == "abcd"
    assert tokenizer().backend == "estimate"
    assert len([r for r in caplog.records if "estimated" in r.getMessage()]) == 1


def test_an_already_usable_cache_dir_is_used_as_is(fresh_tokenizer, monkeypatch, tmp_path):
    from rag.tokens import _litellm_dir

    bundled = _litellm_dir()
    assert bundled is not None and (bundled / cache_key()).is_file()  # litellm's wheel ships the file
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(bundled))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert tokenizer().cache_dir == bundled
    assert not (tmp_path / "xdg").exists()


# -- count_framed: exact counts of framed text from the body's stored count ----------------------

_PIECES = ["word", "Word", " ", "  ", "\n", "\n\n", "\t", ".", "!?", "(", ")", "[S1]", "'s", "don't", "123",
           "4567", "é", "日本語", "—", "\u00a0", "->", "x", "--", "- ", " -", "\r\n", "#", "**", "ü", "ß", "/"]


@given(st.lists(st.sampled_from(_PIECES), max_size=40), st.lists(st.sampled_from(_PIECES), max_size=6),
       st.lists(st.sampled_from(_PIECES), max_size=6))
@settings(max_examples=800, deadline=None)
def test_count_framed_equals_counting_the_whole_text(body, prefix, suffix):
    body_text, head, tail = "".join(body), "".join(prefix), "".join(suffix)
    assert tokens.count_framed(head, body_text, tail, count_tokens(body_text)) == count_tokens(head + body_text + tail)


@pytest.mark.parametrize("head, body, tail", [
    ("[S1] notes/a.md (lines 1–4)\n", "Cats chase mice. They sleep all day.", "\n\n"),
    ("[S2] title\n", "  leading spaces and a last line.\n", "\n\n"),
    ("h\n", "ends with punctuation!!", "\n\n"),
    ("h\n", "one", "\n\n"),
    ("", "no frame at all", ""),
    ("[S3] x\n", "tabs\tand  double  spaces  ", "\n\n"),
])
def test_count_framed_examples(head, body, tail):
    assert tokens.count_framed(head, body, tail, count_tokens(body)) == count_tokens(head + body + tail)


def test_count_framed_trusts_the_given_body_count():
    body = "a body of several words"
    # the stored count is used as is: a wrong one shows in the result (this is what makes it cheap)
    assert tokens.count_framed("h\n", body, "\n\n", count_tokens(body) + 5) == count_tokens("h\n" + body + "\n\n") + 5


@given(st.lists(st.sampled_from(_PIECES), max_size=30), st.lists(st.sampled_from(_PIECES), max_size=5),
       st.lists(st.lists(st.sampled_from(_PIECES), max_size=4), min_size=1, max_size=3))
@settings(max_examples=300, deadline=None)
def test_framed_counts_matches_each_suffix(body, prefix, suffixes):
    body_text, head = "".join(body), "".join(prefix)
    tails = tuple("".join(s) for s in suffixes)
    got = tokens.framed_counts(head, body_text, count_tokens(body_text), tails)
    assert got == tuple(count_tokens(head + body_text + t) for t in tails)
