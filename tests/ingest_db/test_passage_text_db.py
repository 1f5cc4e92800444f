"""The note's names in what the index stores: BM25 finds a note by its file name or alias though its text
never says it, the vectors are made from the same names, and a vault indexed under the old rule is indexed
again at its next run with no manual step."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import psycopg

from rag.config import Settings
from rag.embed.hash import HashEmbedder
from rag.ingest.passage_text import PASSAGE_TEXT_VERSION, embedding_text
from rag.secrets import MASK_RULES_VERSION
from tests.ingest_db.helpers import add, index
from tests.support.files import write_files

FILES = {
    "Garden/Tomato watering.md": "---\naliases: [Irrigation schedule]\n---\nWater the beds at dawn, twice a week.\n",
    "Kitchen/Soup.md": "# Soup\n\nSimmer the stock for an hour.\n",
}


def _lexical(conn: psycopg.Connection, query: str) -> list[str]:
    rows = conn.execute("select source_path from match_lexical_chunks(%s, 5)", (query,)).fetchall()
    return [r["source_path"] for r in rows]


def test_bm25_reads_the_notes_file_name_and_aliases(aconn: psycopg.Connection, settings: Settings,
                                                     tmp_path: Path) -> None:
    add(aconn, "v", write_files(tmp_path / "v", FILES))
    aconn.commit()
    assert not index(settings).failed
    assert _lexical(aconn, "tomato") == ["Garden/Tomato watering.md"]  # the file name only
    assert _lexical(aconn, "irrigation") == ["Garden/Tomato watering.md"]  # the alias only
    assert _lexical(aconn, "dawn") == ["Garden/Tomato watering.md"]  # the text, as before
    stored = aconn.execute("select content from chunks where metadata->>'source_path' = 'Garden/Tomato watering.md'"
                           ).fetchone()
    assert "tomato" not in stored["content"].lower()  # the passage shown is the note's text alone


def test_the_vectors_are_made_from_the_names_too(aconn: psycopg.Connection, settings: Settings,
                                                 tmp_path: Path) -> None:
    add(aconn, "v", write_files(tmp_path / "v", FILES))
    aconn.commit()
    assert not index(settings).failed
    embedder = HashEmbedder(settings.embedding.hash_dims)
    rows = aconn.execute("select c.heading_path, c.content, c.metadata, e.embedding from chunks c "
                         "join embeddings_hash_feature_hash_384 e on e.chunk_id = c.id").fetchall()
    assert rows
    for r in rows:
        text = embedding_text(r["heading_path"], r["content"], r["metadata"])
        assert text.startswith(("Tomato watering, Irrigation schedule\n", "Soup\n"))
        assert np.allclose(np.asarray(r["embedding"], dtype=np.float32), embedder.embed_documents([text])[0],
                           atol=1e-6)


def test_notes_indexed_under_the_old_rule_are_indexed_again_once(aconn: psycopg.Connection, settings: Settings,
                                                                  tmp_path: Path) -> None:
    add(aconn, "v", write_files(tmp_path / "v", FILES))
    aconn.commit()
    assert index(settings).vaults[0].files_indexed == 2
    # as an earlier release stored them: the version without the passage text rule, BM25 without the names
    aconn.execute("update documents set document_version = split_part(document_version, ' ', 1)")
    aconn.execute("update chunks set metadata = metadata - 'source_path'")
    aconn.commit()
    assert _lexical(aconn, "tomato") == []
    again = index(settings).vaults[0]
    assert again.files_indexed == 2 and again.chunks_written >= 2  # every note, with no manual step
    assert _lexical(aconn, "tomato") == ["Garden/Tomato watering.md"]
    versions = {r["document_version"].split(" ", 1)[1] for r in aconn.execute("select document_version from documents")}
    assert versions == {f"text={PASSAGE_TEXT_VERSION} mask={MASK_RULES_VERSION}"}
    assert index(settings).vaults[0].files_indexed == 0  # and once only
