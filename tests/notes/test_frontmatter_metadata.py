"""Notes metadata from frontmatter, on real files indexed by the pipeline: `type`/`doc_type`,
`date`/`updated`/`created` (the file's mtime when none), `tags` and `aliases` become chunk
metadata that the notes profile's doc-type and freshness weights act on and filters select on."""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest

from rag.config import Settings
from rag.ingest.pipeline import index_vaults
from rag.notes.ask import search
from rag.runtime import Runtime
from rag.store.vaults import NewVault, add_vault
from tests.support.files import write_files

BODY = "# Standup\n\nThe standup agenda covers the deploy freeze and the release train.\n"
RECENT = (datetime.now(UTC) - timedelta(days=10)).date().isoformat()
FILES = {
    "meetings/standup.md": f"---\ntype: meeting\ndate: 2024-06-01\ntags: [team, weekly]\naliases: [Daily sync]\n---\n{BODY}",
    "drafts/standup.md": f"---\ndoc_type: draft\ndate: 2024-06-01\n---\n{BODY}",
    "archive/standup.md": f"---\ntype: log\ncreated: 2015-01-01\n---\n{BODY}",
    "recent/standup.md": f"---\ntype: log\nupdated: {RECENT}\ncreated: 2015-01-01\n---\n{BODY}",
    "loose/standup.md": f"---\ntype: log\n---\n{BODY}",
}
NODATE_MTIME = datetime(2019, 3, 4, 12, 0, tzinfo=UTC)


@pytest.fixture
def vault(conn: psycopg.Connection, settings: Settings, tmp_path: Path) -> Path:
    root = write_files(tmp_path / "notes", FILES)
    stamp = NODATE_MTIME.timestamp()
    os.utime(root / "loose/standup.md", (stamp, stamp))
    add_vault(conn, NewVault(name="notes", path=root))
    conn.commit()
    assert not index_vaults(settings).failed
    return root


def runtime_with(settings: Settings, notes_profile: dict[str, Any]) -> Runtime:
    return Runtime.from_settings(settings.model_copy(update={"profiles": {"notes": notes_profile}}), pool_max_size=2)


@pytest.fixture
def ranked(settings: Settings) -> Iterator[Any]:
    made: list[Runtime] = []

    def run(profile: dict[str, Any], **kw: Any) -> list[str]:
        rt = runtime_with(settings, profile)
        made.append(rt)
        return [i.source_path for i in search("standup agenda deploy freeze", vaults=["notes"], k=10, runtime=rt,
                                              **kw).items]

    yield run
    for rt in made:
        rt.close()


def test_frontmatter_becomes_chunk_and_document_metadata(vault: Path, conn: psycopg.Connection) -> None:
    rows = {r["source_path"]: r for r in conn.execute(
        "select d.source_path, d.doc_type, d.doc_date::text as doc_date, d.tags, c.metadata"
        " from documents d join chunks c on c.document_id = d.id").fetchall()}
    meeting = rows["meetings/standup.md"]
    assert (meeting["doc_type"], meeting["doc_date"], meeting["tags"]) == ("meeting", "2024-06-01", ["team", "weekly"])
    assert {k: meeting["metadata"][k] for k in ("doc_type", "date", "tags", "aliases", "date_source")} == {
        "doc_type": "meeting", "date": "2024-06-01", "tags": ["team", "weekly"], "aliases": ["Daily sync"],
        "date_source": "frontmatter"}
    assert rows["drafts/standup.md"]["metadata"]["doc_type"] == "draft"  # doc_type as well as type
    assert rows["archive/standup.md"]["doc_date"] == "2015-01-01"  # created
    assert rows["recent/standup.md"]["doc_date"] == RECENT  # updated wins over created
    nodate = rows["loose/standup.md"]
    assert nodate["doc_date"] == "2019-03-04"  # the file's mtime
    assert nodate["metadata"]["date"] == "2019-03-04" and nodate["metadata"]["date_source"] == "file_mtime"
    assert "aliases" not in rows["drafts/standup.md"]["metadata"]  # absent, not empty: `$exists` means something


def test_doc_type_weights_order_equal_notes(vault: Path, ranked) -> None:
    equal = {"w_freshness": 0.0}
    meeting_first = ranked({**equal, "type_weights": {"meeting": 1.5, "draft": 0.5}})
    draft_first = ranked({**equal, "type_weights": {"meeting": 0.5, "draft": 1.5}})
    assert meeting_first.index("meetings/standup.md") < meeting_first.index("drafts/standup.md")
    assert draft_first.index("drafts/standup.md") < draft_first.index("meetings/standup.md")
    assert meeting_first[0] == "meetings/standup.md" and draft_first[0] == "drafts/standup.md"


def test_freshness_weight_orders_by_the_notes_date(vault: Path, ranked) -> None:
    fresh = ranked({"w_freshness": 0.5, "freshness_half_life_days": 365.0, "type_weights": {"meeting": 1.0}})
    logs = [p for p in fresh if p.startswith(("archive/", "recent/", "loose/"))]
    assert logs == ["recent/standup.md", "loose/standup.md", "archive/standup.md"]
    assert fresh[0] == "recent/standup.md"
    stale = ranked({"w_freshness": 0.0, "type_weights": {"log": 1.0}})
    # without the freshness weight the three logs (one name, one text: BM25 and vectors read the name too) tie
    # and fall back to path order
    assert [p for p in stale if p.startswith(("archive/", "recent/", "loose/"))] == [
        "archive/standup.md", "loose/standup.md", "recent/standup.md"]


def test_filters_select_on_frontmatter_metadata(vault: Path, ranked) -> None:
    assert ranked({}, filters={"doc_type": "meeting"}) == ["meetings/standup.md"]
    assert set(ranked({}, filters={"date": {"$gte": "2020-01-01"}})) == {
        "meetings/standup.md", "drafts/standup.md", "recent/standup.md"}
    assert ranked({}, filters={"tags": ["weekly"]}) == ["meetings/standup.md"]
    assert ranked({}, filters={"aliases": {"$exists": True}}) == ["meetings/standup.md"]
