"""What a passage is to the index (rag.ingest.passage_text): the note's names lead its embedded text."""

from __future__ import annotations

from rag.ingest.passage_text import embedding_text, note_names


def test_a_notes_names_are_its_file_name_then_its_aliases() -> None:
    meta = {"source_path": "Obsidian Sync/Version history.md", "aliases": ["Restore a file", "version history", ""]}
    assert note_names(meta) == ["Version history", "Restore a file"]  # an alias repeating the name is left out
    assert note_names({"source_path": "README"}) == ["README"]
    assert note_names({"source_path": "a.b.canvas", "aliases": "not a list"}) == ["a.b"]


def test_the_embedded_text_leads_with_the_names_then_the_heading_path() -> None:
    meta = {"source_path": "Obsidian Sync/Version history.md", "aliases": ["Restore"]}
    assert embedding_text("# Restore > ## Steps", "Select the version.", meta) == (
        "Version history, Restore\n# Restore > ## Steps\n\nSelect the version.")
    assert embedding_text("", "Select the version.", meta) == "Version history, Restore\nSelect the version."


def test_a_beir_entry_or_a_chunk_without_a_path_keeps_its_text() -> None:
    """A BEIR document's id is no name a reader knows (its SciFact figures must not move)."""
    assert embedding_text("", "Aspirin lowers risk.", {"source_path": "4983", "beir_id": "4983"}) == "Aspirin lowers risk."
    assert embedding_text("# H", "text", {}) == "# H\n\ntext"
