"""The exit codes of every `ragpg` command, in one table: the README's "Errors and exit codes" and
the epilog of `ragpg --help` show it (a test checks both against it, against rag/errors.py and
against what cli/main.py returns)."""

from __future__ import annotations

from dataclasses import dataclass

from rag import errors

# `ragpg eval --baseline` found a metric worse than the baseline (rag.eval.errors.EvalExit.DEGRADED;
# not imported here: rag.eval needs the `eval` extra, and every command reads this table).
DEGRADED = 9
INTERRUPTED = 130  # the shell's code for SIGINT (128 + 2)


@dataclass(frozen=True)
class ExitCode:
    code: int
    meaning: str
    examples: str
    error: type[errors.RagError] | None = None  # the library error that carries the code


def _carried(error: type[errors.RagError], meaning: str, examples: str) -> ExitCode:
    return ExitCode(error.exit_code, meaning, examples, error)


EXIT_CODES: tuple[ExitCode, ...] = (
    ExitCode(0, "success", "`ragpg reindex`: every vault was indexed"),
    _carried(errors.RagError, "runtime failure",
             "a file that cannot be written, the port `ragpg serve` should listen on is taken"),
    _carried(errors.InputError, "bad input or configuration",
             "a bad option value, a missing argument, an invalid setting or config file, a vault name taken by "
             "another folder"),
    _carried(errors.DatabaseError, "database unreachable or unsuitable",
             "no server at DATABASE_URL (reported within `db.connect_timeout_s`), no pgvector"),
    _carried(errors.NotFoundError, "not found",
             "a vault, folder, profile, chunk or path that does not exist; a vault with nothing indexed yet"),
    _carried(errors.EmbeddingError, "embedding model failed",
             "the provider still failing after `embedding.max_retries`"),
    _carried(errors.LLMError, "language model failed",
             "only where an answer needs one; elsewhere ragpg carries on without it"),
    _carried(errors.AuthError, "not authorised", "an API key that may not read a vault"),
    _carried(errors.AdmissionError, "server over capacity", "over HTTP this is a 429"),
    ExitCode(DEGRADED, "worse than the baseline", "`ragpg eval --baseline`: a metric below it by more than "
             "the tolerance"),
    ExitCode(INTERRUPTED, "interrupted", "Ctrl-C"),
)


def help_epilog() -> str:
    """The paragraph `ragpg --help` ends with."""
    codes = ", ".join(f"{c.code} {c.meaning}" for c in EXIT_CODES)
    return (f"Exit codes: {codes}. `ragpg db psql` and `ragpg db console` exit with psql's code. Errors are "
            "one line on stderr (the README's \"Errors and exit codes\" has examples).")
