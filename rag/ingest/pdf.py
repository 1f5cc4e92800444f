"""A PDF attachment as the markdown the rest of ingestion reads: one `## Page N` section per page
holding the page's text, so a passage's heading path — what a citation shows — says the page (N counts
pages from 1, as a viewer's "page N of M" does). There is no `#` heading: the document's title is its
file name (a `# Page 1` would have been taken for the title).

Needs the optional extra `ragpg[pdf]` (pypdf). `pdf_problem` is the check made when the file is read
(the extra missing, the file broken, encrypted with a password, or over `ingest.max_pdf_pages`), so
such a file is skipped with its reason in the index report; `pdf_markdown` extracts the text of a
file that passed it. A file encrypted with an empty password (only its permissions restricted) opens
in any viewer and is indexed. A page whose text cannot be extracted is left empty and named in a
warning; the other pages are still indexed. Page text is plain text: a line of it never becomes a
heading at the page's level (rag.ingest.sections).
"""

from __future__ import annotations

import importlib
import io
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from rag.ingest.sections import heading_line, section_body

if TYPE_CHECKING:
    from pypdf import PdfReader

PdfSkipReason = Literal["needs_extra", "encrypted", "too_many_pages", "broken"]
NEEDS_EXTRA = "PDF support is an optional extra: install ragpg[pdf]"


class PdfSkip(Exception):
    """Why a PDF cannot be indexed: `reason` is the skip reason the index report shows."""

    def __init__(self, reason: PdfSkipReason, detail: str) -> None:
        super().__init__(detail)
        self.reason, self.detail = reason, detail


@dataclass(frozen=True)
class PdfMarkdown:
    text: str
    warnings: list[str]


def available() -> bool:
    """Whether the `pdf` extra (pypdf) is installed and imports."""
    try:
        importlib.import_module("pypdf")
    except ImportError:
        return False
    return True


def pdf_problem(data: bytes, *, max_pages: int) -> PdfSkip | None:
    """Why the PDF in `data` is skipped, or None when its text can be read."""
    try:
        _open(data, max_pages)
    except PdfSkip as skip:
        return skip
    return None


def pdf_markdown(data: bytes, source_path: str, *, max_pages: int) -> PdfMarkdown:
    """The text of every page, one section per page; raises PdfSkip for a file `pdf_problem` refuses."""
    reader = _open(data, max_pages)
    lines: list[str] = []
    failed: list[int] = []
    empty = 0
    for number, page in enumerate(reader.pages, start=1):
        lines += [heading_line(2, f"Page {number}"), ""]
        try:
            text = _clean(page.extract_text())
        except Exception:  # one damaged page must not cost the others theirs
            failed.append(number)
            continue
        if text.strip():
            lines += [section_body(text, 2), ""]
        else:
            empty += 1
    warnings = [f"{source_path}: text of page(s) {', '.join(map(str, failed))} could not be extracted"] if failed else []
    if empty == len(reader.pages):
        warnings.append(f"{source_path}: no text in any page (scanned images are not read)")
    return PdfMarkdown("\n".join(lines).rstrip("\n") + "\n", warnings)


def _open(data: bytes, max_pages: int) -> PdfReader:
    if not available():
        raise PdfSkip("needs_extra", NEEDS_EXTRA)
    from pypdf import PasswordType, PdfReader
    from pypdf.errors import DependencyError

    # pypdf logs what it repairs in a damaged file; with no handler set that is a bare stderr line
    # in the middle of the CLI's output. The index report names the file and the reason instead.
    logging.getLogger("pypdf").setLevel(logging.ERROR)

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            try:
                opened = reader.decrypt("")
            except DependencyError:
                raise PdfSkip("encrypted", "AES-encrypted; trying its empty password needs the cryptography "
                              "package") from None
            if opened == PasswordType.NOT_DECRYPTED:
                raise PdfSkip("encrypted", "protected by a password")
        pages = len(reader.pages)
    except PdfSkip:
        raise
    except Exception as exc:  # pypdf raises many kinds for a damaged file; all mean the same here
        detail = (str(exc).strip().splitlines() or [""])[0]
        raise PdfSkip("broken", f"not a readable PDF: {type(exc).__name__}: {detail}".rstrip(": ")) from None
    if pages == 0:
        raise PdfSkip("broken", "no pages")
    if pages > max_pages:
        raise PdfSkip("too_many_pages", f"{pages} pages > limit {max_pages} (ingest.max_pdf_pages)")
    return reader


def _clean(text: str) -> str:
    # Postgres text holds no NUL, and a lone surrogate from a bad font map cannot be encoded.
    return text.replace("\x00", "").encode("utf-8", "replace").decode("utf-8")
