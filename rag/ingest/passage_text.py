"""What a passage is to the index: the text its vector is made from and the text BM25 reads.

A passage alone often names neither its note nor its folder: in Obsidian a note's title is its
file name and most notes have no H1, so "Select Restore" says nothing of "Version history". Both
texts therefore lead with the note's names (its file name without extension, then its aliases),
then the heading path, then the passage. Chosen on the golden dev split (docs/quality.md): the
names in the embedded text lifted note recall@5 of plain fusion from 0.800 to 0.832 (the vector
leg alone 0.789 to 0.821). The lexical text is built by the same rule in SQL
(`ragpg_chunk_search_text`, db/sql/20_bm25_stats.sql), from the same stored metadata.

Both are derived from stored columns only (heading path, content, the chunk's metadata), so
vectors backfilled for a new model match fresh ones. A BEIR entry (metadata `beir_id`) is a
document, not a note: its text is unchanged. `PASSAGE_TEXT_VERSION` is part of every note's stored
version, so a change here re-indexes every note at its vault's next run, with no manual step.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any, Final

PASSAGE_TEXT_VERSION: Final = "names-1"


def note_names(metadata: Mapping[str, Any]) -> list[str]:
    """The note's names as a reader knows them: the file name without its extension, then its aliases
    (each once, case aside). None for a BEIR entry or a chunk without a source path."""
    source_path = metadata.get("source_path")
    if "beir_id" in metadata or not isinstance(source_path, str) or not source_path:
        return []
    names = [PurePosixPath(source_path).stem]
    aliases = metadata.get("aliases")
    for alias in aliases if isinstance(aliases, list) else []:
        if isinstance(alias, str) and alias.strip() and alias.strip().casefold() not in {n.casefold() for n in names}:
            names.append(alias.strip())
    return names


def embedding_text(heading_path: str, content: str, metadata: Mapping[str, Any]) -> str:
    """What gets embedded for a chunk: the note's names, its heading path, then its text."""
    body = f"{heading_path}\n\n{content}" if heading_path else content
    names = note_names(metadata)
    return f"{', '.join(names)}\n{body}" if names else body
