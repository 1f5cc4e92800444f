"""Every kind of vault file as the text ingestion parses: markdown and plain text as written, a
canvas (rag.ingest.canvas) and a PDF (rag.ingest.pdf) converted to markdown, one section per card or
page, so the parser, the chunker and citations handle them like any note."""

from __future__ import annotations

from rag.config import IngestSettings
from rag.ingest.canvas import canvas_markdown
from rag.ingest.pdf import pdf_markdown
from rag.ingest.walk import Kind


def document_text(kind: Kind, source_path: str, data: bytes, ingest: IngestSettings) -> tuple[str, list[str]]:
    """The text to parse and chunk, and warnings for the index report."""
    if kind == "pdf":
        pdf = pdf_markdown(data, source_path, max_pages=ingest.max_pdf_pages)
        return pdf.text, pdf.warnings
    text = data.decode("utf-8")
    if kind == "canvas":
        canvas = canvas_markdown(text, source_path, max_nodes=ingest.max_canvas_nodes)
        return canvas.text, canvas.warnings
    return text, []
