"""Errors and exit codes of `ragpg eval`, kept in one place.

The eval command has its own exit-code contract (0 ok, 1 runtime failure, 2 malformed input,
3 degraded vs baseline), which differs from the library-wide `RagError.exit_code` values
(e.g. `DatabaseError.exit_code` is 3 there). `cli_support` maps errors onto `EvalExit`.
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
    DEGRADED = 3


class GoldenError(InputError):
    """A golden file is unreadable or invalid; the message names the file, line and case."""


class BaselineError(InputError):
    """A baseline file is unreadable, malformed, or was made with a different metric set."""


class EvalCaseError(InputError):
    """The search function rejected a case's input (e.g. an unknown vault or a bad filter)."""


class EvalRunError(RagError):
    """The evaluation could not run to the end (search failure, unwritable output)."""

    exit_code = int(EvalExit.RUNTIME_FAILURE)


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
