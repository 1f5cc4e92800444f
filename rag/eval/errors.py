"""Errors and exit codes of `ragpg eval`, kept in one place.

Errors keep ragpg's exit codes (`RagError.exit_code`: 1 runtime failure, 2 malformed input,
3 database, 4 not found, ...), as in every command; a run worse than its baseline is the one code
of eval's own, 9 (`EvalExit.DEGRADED`). An error met while a case runs names the case and keeps the
code of what went wrong.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from enum import IntEnum
from pathlib import Path

from rag.errors import InputError, RagError


class EvalExit(IntEnum):
    OK = 0
    RUNTIME_FAILURE = 1
    MALFORMED_INPUT = 2
    DEGRADED = 9


class GoldenError(InputError):
    """A golden file is unreadable or invalid; the message names the file, line and case."""


class BaselineError(InputError):
    """A baseline file is unreadable, malformed, or was made with a different metric set."""


class EvalCaseError(InputError):
    """The search function rejected a case's input (e.g. an unknown vault or a bad filter)."""

    def __init__(self, message: str, *, exit_code: int = InputError.exit_code) -> None:
        super().__init__(message)
        self.exit_code = exit_code  # the rejection's own (4 for an unknown vault)


class EvalRunError(RagError):
    """The evaluation could not run to the end (search failure, unwritable output)."""

    exit_code = int(EvalExit.RUNTIME_FAILURE)

    def __init__(self, message: str, *, exit_code: int = int(EvalExit.RUNTIME_FAILURE)) -> None:
        super().__init__(message)
        self.exit_code = exit_code  # the failure's own (3 for the database)


@contextmanager
def reading(path: Path, what: str, error: type[InputError]) -> Iterator[None]:
    """A failure to read `path` inside the block, as one `error` line naming the file: `what` is its
    kind with a trailing space ("golden file ", "baseline ") or "" for a bare path."""
    try:
        yield
    except FileNotFoundError:
        raise error(f"{what}{path} not found") from None
    except IsADirectoryError:
        raise error(f"{what}{path} is a directory, not a file") from None
    except UnicodeDecodeError:
        raise error(f"{what}{path} is not UTF-8 text") from None
    except OSError as exc:
        raise error(f"cannot read {what}{path}: {exc.strerror or exc}") from None
