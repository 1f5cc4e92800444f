"""Token counting with tiktoken `cl100k_base`, offline.

tiktoken downloads its BPE file on first use unless the file is already in its cache dir
(`TIKTOKEN_CACHE_DIR`, file name = sha1 of the blob URL; see `tiktoken.load.read_file_cached`).
litellm's wheel ships that file under the same name in `litellm/litellm_core_utils/tokenizers/`.
Before the first `tiktoken.get_encoding` call we make sure a hash-checked copy sits in a ragpg
cache dir (`<user cache dir>/ragpg/tiktoken`, else `<tmp>/ragpg-tiktoken`) and point tiktoken
at it for that one call, so no download is ever attempted. Once loaded, tiktoken keeps the
encoding in memory.

When no copy of the file can be found (or tiktoken is missing) counts fall back to an
estimate of ⌈UTF-8 bytes / 4⌉, logged once. The estimate is deliberately the usual
rule of thumb for English text with cl100k; budgets stay bounded either way because the
same function counts and truncates.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import logging
import math
import os
import re
import shutil
import tempfile
import threading
import uuid
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import platformdirs

from rag.errors import InputError

if TYPE_CHECKING:
    from tiktoken import Encoding

log = logging.getLogger(__name__)

APP_NAME = "ragpg"
ENCODING_NAME = "cl100k_base"
# The URL and sha256 tiktoken itself uses for cl100k_base (tiktoken_ext/openai_public.py).
BLOB_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
BLOB_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
CACHE_ENV = "TIKTOKEN_CACHE_DIR"
CACHE_SUBDIR = "tiktoken"
TEMP_CACHE_DIR_NAME = "ragpg-tiktoken"
LITELLM_TOKENIZER_DIR = ("litellm_core_utils", "tokenizers")
ESTIMATE_BYTES_PER_TOKEN = 4

_env_lock = threading.Lock()


@dataclass(frozen=True)
class Tokenizer:
    """The active counter: a tiktoken encoding, or None for the byte estimate."""

    backend: str  # "tiktoken" or "estimate"
    encoding: Encoding | None = None
    cache_dir: Path | None = None


def cache_key() -> str:
    """tiktoken's cache file name for the blob (sha1 of the URL)."""
    return hashlib.sha1(BLOB_URL.encode()).hexdigest()


def _valid_file(path: Path) -> bool:
    try:
        return path.is_file() and hashlib.sha256(path.read_bytes()).hexdigest() == BLOB_SHA256
    except OSError:
        return False


def _litellm_dir() -> Path | None:
    # find_spec on a top-level package does not import it (litellm's import is slow and rewrites
    # TIKTOKEN_CACHE_DIR as a side effect).
    try:
        spec = importlib.util.find_spec("litellm")
    except (ImportError, ValueError):
        return None
    locations = list(spec.submodule_search_locations or []) if spec else []
    return Path(locations[0]).joinpath(*LITELLM_TOKENIZER_DIR) if locations else None


def _source_dirs() -> Iterator[Path]:
    """Folders that may already hold the blob under tiktoken's name, most specific first."""
    for env in (CACHE_ENV, "DATA_GYM_CACHE_DIR"):
        if os.environ.get(env):
            yield Path(os.environ[env])
    yield Path(tempfile.gettempdir()) / "data-gym-cache"
    bundled = _litellm_dir()
    if bundled is not None:
        yield bundled


def _target_dirs() -> Iterator[Path]:
    yield Path(platformdirs.user_cache_dir(APP_NAME)) / CACHE_SUBDIR
    yield Path(tempfile.gettempdir()) / TEMP_CACHE_DIR_NAME


def _install(source: Path, target_dir: Path) -> bool:
    """Copy atomically (write a temp file, then rename) so concurrent processes never see half a file."""
    try:
        target_dir.mkdir(parents=True, exist_ok=True)
        tmp = target_dir / f".{cache_key()}.{uuid.uuid4().hex}.tmp"
        shutil.copyfile(source, tmp)
        os.replace(tmp, target_dir / cache_key())
        return True
    except OSError:
        return False


def prepare_cache_dir() -> Path | None:
    """A ragpg cache dir holding the hash-checked cl100k_base file, or None when none can be found."""
    for target in _target_dirs():
        if _valid_file(target / cache_key()):
            return target
    source = next((d / cache_key() for d in _source_dirs() if _valid_file(d / cache_key())), None)
    if source is None:
        return None
    for target in _target_dirs():
        if _install(source, target):
            return target
    return source.parent  # read-only everywhere: tiktoken can still read it where it is


@contextmanager
def _cache_env(cache_dir: Path) -> Iterator[None]:
    """Point tiktoken at `cache_dir` for one call, then restore the caller's environment."""
    with _env_lock:
        previous = os.environ.get(CACHE_ENV)
        os.environ[CACHE_ENV] = str(cache_dir)
        try:
            yield
        finally:
            if previous is None:
                os.environ.pop(CACHE_ENV, None)
            else:
                os.environ[CACHE_ENV] = previous


@functools.lru_cache(maxsize=1)
def tokenizer() -> Tokenizer:
    """Loaded once per process (`tokenizer.cache_clear()` reloads, for tests)."""
    try:
        import tiktoken
    except ImportError:
        return _estimate("tiktoken is not installed")
    current = os.environ.get(CACHE_ENV)
    if current and _valid_file(Path(current) / cache_key()):
        cache_dir: Path | None = Path(current)  # already set up (by the user, or by importing litellm)
        env: AbstractContextManager[None] = nullcontext()
    else:
        cache_dir = prepare_cache_dir()
        if cache_dir is None:
            return _estimate(f"no offline copy of {ENCODING_NAME} found (litellm not installed?)")
        env = _cache_env(cache_dir)
    try:
        with env:
            encoding = tiktoken.get_encoding(ENCODING_NAME)
    except Exception as exc:  # a broken file or plugin must not break counting
        return _estimate(f"tiktoken could not load {ENCODING_NAME}: {exc}")
    return Tokenizer("tiktoken", encoding, cache_dir)


def _estimate(reason: str) -> Tokenizer:
    log.warning("token counts are estimated (≈ UTF-8 bytes / %d): %s", ESTIMATE_BYTES_PER_TOKEN, reason)
    return Tokenizer("estimate")


def count_tokens(text: str) -> int:
    tok = tokenizer()
    if tok.encoding is None:
        return math.ceil(len(text.encode("utf-8")) / ESTIMATE_BYTES_PER_TOKEN)
    # encode_ordinary: text that happens to contain "<|endoftext|>" is counted, not rejected.
    return len(tok.encoding.encode_ordinary(text))


# A space right after a non-whitespace character. tiktoken splits text into pieces by a regex
# before BPE, and no piece of cl100k_base or o200k_base runs through such a point: the piece
# holding the character before it (letters, digits, punctuation — whose `[\r\n]*` tail takes
# newlines, never spaces — or a contraction) cannot take a space, and whitespace pieces cannot
# hold that character. So the count of a text is the sum of the counts of its two sides there.
_SPLIT_POINT = re.compile(r"(?<=\S) ")


def count_framed(prefix: str, body: str, suffix: str, body_tokens: int) -> int:
    """``count_tokens(prefix + body + suffix)``, exactly, given ``body_tokens == count_tokens(body)``
    (e.g. counted at index time): only the body's first and last words are encoded again with
    their new neighbours, so framing a long text costs a few tokens' work, not the whole text's."""
    return framed_counts(prefix, body, body_tokens, (suffix,))[0]


def framed_counts(prefix: str, body: str, body_tokens: int, suffixes: tuple[str, ...]) -> tuple[int, ...]:
    """``count_framed(prefix, body, s, body_tokens)`` for each suffix s, sharing the work."""
    encoding = tokenizer().encoding
    first = _SPLIT_POINT.search(body)
    if encoding is None or first is None:
        return tuple(count_tokens(prefix + body + s) for s in suffixes)
    q = first.start()
    p = body.rfind(" ", q)
    while p > q and body[p - 1].isspace():  # the last space that follows a non-space
        p = body.rfind(" ", q, p)
    head = count_tokens(prefix + body[:q]) - count_tokens(body[:q]) if prefix else 0
    last = body[p:]
    last_tokens = count_tokens(last)
    return tuple(body_tokens + head + (count_tokens(last + s) - last_tokens if s else 0) for s in suffixes)


def truncate_to_tokens(text: str, n: int) -> str:
    """The longest prefix of `text` (cut at token boundaries) that counts at most `n` tokens."""
    if n < 0:
        raise InputError(f"token limit must be ≥ 0, got {n}")
    tok = tokenizer()
    if tok.encoding is None:
        return text.encode("utf-8")[: n * ESTIMATE_BYTES_PER_TOKEN].decode("utf-8", errors="ignore")
    ids = tok.encoding.encode_ordinary(text)
    if len(ids) <= n:
        return text
    keep = n
    while True:
        # A cut can split a multi-byte character; drop the partial bytes. Re-encoding a prefix can
        # in rare cases yield more tokens, so shrink until the count holds.
        prefix = tok.encoding.decode_bytes(ids[:keep]).decode("utf-8", errors="ignore")
        if keep == 0 or count_tokens(prefix) <= n:
            return prefix
        keep -= 1
