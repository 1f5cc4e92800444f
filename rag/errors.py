"""The error hierarchy users can catch; the CLI and the HTTP server map it in one place each."""

from __future__ import annotations


class RagError(Exception):
    """Base of every error ragpg raises on purpose. Its message is one clear line."""

    exit_code: int = 1


class InputError(RagError):
    """Bad input from the caller: a value, a filter, a file, a name."""

    exit_code = 2


class ConfigError(InputError):
    """An invalid setting or config file."""


class NotFoundError(InputError):
    """A named thing (vault, chunk, folder, profile) does not exist."""

    exit_code = 4


class AmbiguousNameError(NotFoundError):
    """A name fits several things and none is preferred; `candidates` lists them (HTTP 409)."""

    def __init__(self, message: str, candidates: list[str]) -> None:
        super().__init__(message)
        self.candidates = candidates


class ConflictError(InputError):
    """The request clashes with work already in progress (e.g. an index run already queued)."""


class DatabaseError(RagError):
    """The database cannot be reached or lacks what ragpg needs (e.g. pgvector)."""

    exit_code = 3


class EmbeddingError(RagError):
    """An embedding provider failed."""

    exit_code = 5


class LLMError(RagError):
    """An LLM call failed; callers degrade gracefully instead of failing the request."""

    exit_code = 6


class AuthError(RagError):
    """Missing, invalid or insufficient credentials."""

    exit_code = 7


class AdmissionError(RagError):
    """The server is at capacity."""

    exit_code = 8
