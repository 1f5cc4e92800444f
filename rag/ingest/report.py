"""What an index run reports: per vault counts, skips and warnings, and the totals over vaults."""

from __future__ import annotations

import resource
import sys
from dataclasses import dataclass, field
from typing import Any, Protocol

from rag.secrets import mask_secrets


def peak_rss_mb() -> float:
    """This process's peak resident memory so far, in MiB (ru_maxrss is KiB on Linux, bytes on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


@dataclass(frozen=True)
class SkipRecord:
    path: str  # the stored (masked) path: what reports show
    reason: str
    detail: str = ""
    disk_path: str = ""  # the real relative path, for looking on disk; never reported

    @property
    def shown_detail(self) -> str:
        """The detail as reports show it: it may quote the file, so it is masked like all that is shown."""
        return mask_secrets(self.detail) if self.detail else ""

    @property
    def message(self) -> str:
        return f"skipped {self.path}: {self.reason}" + (f" ({self.shown_detail})" if self.detail else "")

    def to_dict(self) -> dict[str, str]:
        return {"path": self.path, "reason": self.reason, "detail": self.shown_detail}


@dataclass
class VaultReport:
    vault: str
    embedding_model: str
    files_seen: int = 0
    files_indexed: int = 0
    files_unchanged: int = 0
    files_removed: int = 0
    files_failed_closed: int = 0  # stored as the most restricted level: frontmatter or confidentiality unusable
    chunks_written: int = 0
    chunks_reembedded: int = 0
    skipped: list[SkipRecord] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0
    error: str | None = None
    error_code: int = 0
    lexical_backend: str | None = None  # rag.store.lexical_backend: sql or pg_textsearch, once the run finished

    @property
    def shown_warnings(self) -> list[str]:
        """The warnings as printed and stored: they quote front matter values, masked like all that is shown."""
        return [mask_secrets(w) for w in self.warnings]

    @property
    def shown_error(self) -> str | None:
        return None if self.error is None else mask_secrets(self.error)

    def to_dict(self) -> dict[str, Any]:
        return {
            "vault": self.vault, "lexical_backend": self.lexical_backend, "files_seen": self.files_seen, "files_indexed": self.files_indexed,
            "files_unchanged": self.files_unchanged, "files_skipped": len(self.skipped),
            "files_removed": self.files_removed, "files_failed_closed": self.files_failed_closed,
            "chunks_written": self.chunks_written,
            "chunks_reembedded": self.chunks_reembedded, "skipped": [s.to_dict() for s in self.skipped],
            "warnings": self.shown_warnings, "seconds": round(self.seconds, 3),
            "embedding_model": self.embedding_model, "error": self.shown_error,
        }


@dataclass
class IndexReport:
    embedding_model: str
    vaults: list[VaultReport] = field(default_factory=list)
    seconds: float = 0.0
    peak_rss_mb: float = 0.0  # of the indexing process, at the end of the run

    @property
    def failed(self) -> list[VaultReport]:
        return [v for v in self.vaults if v.error is not None]

    def total(self, name: str) -> int:
        return sum(int(getattr(v, name)) for v in self.vaults)

    def to_dict(self) -> dict[str, Any]:
        names = ("files_seen", "files_indexed", "files_unchanged", "files_removed", "files_failed_closed",
                 "chunks_written", "chunks_reembedded")
        totals: dict[str, Any] = {n: self.total(n) for n in names}
        totals["files_skipped"] = sum(len(v.skipped) for v in self.vaults)
        return {**totals, "seconds": round(self.seconds, 3), "peak_rss_mb": round(self.peak_rss_mb, 1),
                "embedding_model": self.embedding_model,
                "ok": not self.failed, "vaults": [v.to_dict() for v in self.vaults]}


class IndexProgress(Protocol):
    """What the CLI's progress bars listen to; the library never draws anything itself."""

    def phase(self, text: str) -> None: ...  # what the run does now: "notes: walking the folder"
    def begin_vault(self, vault: str, files: int) -> None: ...
    def files_done(self, n: int) -> None: ...
    def chunks_queued(self, n: int) -> None: ...  # chunks handed to the embedder
    def chunks_done(self, n: int) -> None: ...  # chunks embedded


class NoProgress:
    def phase(self, text: str) -> None:
        pass

    def begin_vault(self, vault: str, files: int) -> None:
        pass

    def chunks_queued(self, n: int) -> None:
        pass

    def files_done(self, n: int) -> None:
        pass

    def chunks_done(self, n: int) -> None:
        pass
