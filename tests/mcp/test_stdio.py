"""`ragpg mcp` as a subprocess, driven by the SDK's own stdio client over a fixed indexed corpus (real
Postgres, real files): every tool and the resources, their paths and citations, and a scoped server
(`--clearance public`, `--vault`, `--key`) that never returns what it may not."""

from __future__ import annotations

from pathlib import Path

import anyio
import mcp_types as types
import psycopg
import pytest

from rag.store import keys as key_store
from tests.mcp.conftest import (
    FILES,
    INTERNAL_MARK,
    NOT_MENTIONED,
    PUBLIC_MARK,
    RESTRICTED_MARK,
    WORK_MARK,
    Corpus,
)
from tests.mcp.session import TOOL_NAMES, data, error_text, stderr_of, stdio_session

SECRET_QUERY = f"tomatoes launch code {RESTRICTED_MARK} watering"


def _paths(vault: str) -> set[str]:
    return set(FILES[vault])


def test_every_tool_and_the_resources_over_stdio(db_url: str, corpus: Corpus, tmp_path: Path) -> None:
    async def main() -> None:
        async with stdio_session(db_url, tmp_path) as (s, stderr):
            # what it serves, said on stderr at start
            assert "serving every vault at every confidentiality level" in stderr_of(stderr)
            assert "everything this user can read" in stderr_of(stderr)

            tools = {t.name: t for t in (await s.list_tools()).tools}
            assert set(tools) == TOOL_NAMES
            assert all(t.description and t.input_schema["type"] == "object" and t.output_schema for t in tools.values())
            assert tools["search_notes"].input_schema["required"] == ["query"]

            listed = (await s.list_resources()).resources
            assert [r.uri for r in listed] == ["ragpg://garden/plans/roadmap.md", "ragpg://garden/plans/secret.md",
                                               "ragpg://garden/tomatoes.md", "ragpg://work/meeting.md"]
            templates = (await s.list_resource_templates()).resource_templates
            assert [t.uri_template for t in templates] == ["ragpg://{vault}/{+path}"]
            note = (await s.read_resource("ragpg://garden/tomatoes.md")).contents[0]
            assert note.text == FILES["garden"]["tomatoes.md"]  # the stored passages, laid out as the file

            found = data(await s.call_tool("search_notes", {"query": "tomatoes watering", "vaults": ["garden"],
                                                            "k": 3}))
            assert 1 <= len(found["notes"]) <= 3  # by note: at most k notes, each with its best passages
            assert len({n["path"] for n in found["notes"]}) == len(found["notes"])
            assert found["passages"] == [p for n in found["notes"] for p in n["passages"]]
            assert all(n["score"] == n["passages"][0]["score"] for n in found["notes"])
            one = data(await s.call_tool("search_notes", {"query": "tomatoes watering", "k": 1, "by": "passage"}))
            assert len(one["passages"]) == 1
            for hit in found["passages"]:
                assert hit["vault"] == "garden" and hit["path"] in _paths("garden")
                assert hit["uri"] == f"ragpg://garden/{hit['path']}" and hit["start_line"] >= 1
            # the unrestricted server does find the restricted note (the scoped one below must not)
            secret = data(await s.call_tool("search_notes", {"query": SECRET_QUERY}))
            assert any(RESTRICTED_MARK in h["snippet"] for h in secret["passages"])

            answer = data(await s.call_tool("ask_notes", {"question": "When should I water tomatoes?",
                                                          "vaults": ["garden"]}))
            assert not answer["abstained"] and answer["answered_by"] == "extractive"
            assert answer["sources"] and all(src["path"] in _paths("garden") for src in answer["sources"])
            assert "twice a week" in answer["answer"]
            watering = [src for src in answer["sources"] if src["path"] == "tomatoes.md"
                        and src["heading"] == "Tomatoes › Watering" and src["location"] == "lines 5-7"]
            assert watering and (watering[0]["start_line"], watering[0]["end_line"]) == (5, 7)

            context = data(await s.call_tool("get_context", {"query": "tomatoes watering", "budget_tokens": 2000}))
            assert context["citations"] and not context["insufficient"]
            for citation in context["citations"]:
                assert f"[{citation['marker']}]" in context["context"]
                assert citation["path"] in _paths(citation["vault"])
                assert citation["uri"] == f"ragpg://{citation['vault']}/{citation['path']}"
                assert all(ref.startswith(f"{citation['vault']}/{citation['path']}#") for ref in citation["chunk_refs"])
            assert {p["ref"] for p in context["used"]} <= {r for c in context["citations"] for r in c["chunk_refs"]}

            lines = data(await s.call_tool("read_note", {"vault": "garden", "path": "tomatoes.md", "start_line": 5,
                                                         "end_line": 7}))
            assert lines["text"].startswith("## Watering") and (lines["start_line"], lines["end_line"]) == (5, 7)
            assert [(x["heading"], x["location"]) for x in lines["sections"]] == [("Tomatoes › Watering", "lines 5-7")]
            assert not lines["truncated"] and lines["next_start_line"] is None

            vaults = data(await s.call_tool("list_vaults", {}))["vaults"]
            assert [(v["name"], v["documents"]) for v in vaults] == [("garden", 3), ("work", 1)]
            folders = data(await s.call_tool("list_folders", {"vault": "garden"}))
            assert {f["folder"] for f in folders["folders"]} == {"", "plans"}

    anyio.run(main)


def test_a_public_scope_never_returns_a_restricted_note(db_url: str, corpus: Corpus, tmp_path: Path) -> None:
    hidden = (RESTRICTED_MARK, INTERNAL_MARK, "secret.md", "roadmap.md")

    async def main() -> None:
        async with stdio_session(db_url, tmp_path, "--clearance", "public") as (s, stderr):
            assert "confidentiality public only (from --vault/--clearance)" in stderr_of(stderr)
            results = [
                await s.call_tool("search_notes", {"query": SECRET_QUERY, "k": 20}),
                await s.call_tool("search_notes", {"query": f"roadmap codename {INTERNAL_MARK}"}),
                await s.call_tool("ask_notes", {"question": f"What is the launch code {RESTRICTED_MARK}?"}),
                await s.call_tool("get_context", {"query": SECRET_QUERY}),
                await s.call_tool("get_context", {"query": SECRET_QUERY, "filters": {"confidentiality": "restricted"}}),
                await s.call_tool("list_folders", {"vault": "garden"}),
            ]
            for result in results:
                found = data(result)
                # what the notes gave (the query is echoed back, and the decision names the query's words)
                # (the no-coverage message repeats the question's own name: "... do not mention <it>.")
                shown = NOT_MENTIONED.sub("", str({k: v for k, v in found.items() if k not in ("query", "decision")}))
                assert not any(mark in shown for mark in hidden), shown
                assert "secret.md" not in str(found.get("decision"))
            assert data(results[0])["passages"]  # the public notes are still found
            assert [v["documents"] for v in data(await s.call_tool("list_vaults", {}))["vaults"]] == [1, 1]
            assert {f["folder"] for f in data(results[-1])["folders"]} == {""}

            # a hidden note reads exactly like a missing one, as a tool and as a resource
            hidden_note = error_text(await s.call_tool("read_note", {"vault": "garden", "path": "plans/secret.md"}))
            missing_note = error_text(await s.call_tool("read_note", {"vault": "garden", "path": "plans/nothing.md"}))
            assert hidden_note == "error: no note garden/plans/secret.md"
            assert missing_note == "error: no note garden/plans/nothing.md"
            assert [r.uri for r in (await s.list_resources()).resources] == ["ragpg://garden/tomatoes.md",
                                                                            "ragpg://work/meeting.md"]
            with pytest.raises(Exception, match="no note garden/plans/secret.md"):
                await s.read_resource("ragpg://garden/plans/secret.md")
            assert PUBLIC_MARK in (await s.read_resource("ragpg://garden/tomatoes.md")).contents[0].text

    anyio.run(main)


def test_a_key_and_vault_scope(conn: psycopg.Connection, db_url: str, corpus: Corpus, tmp_path: Path) -> None:
    async def main() -> None:
        # the key through the environment (a command line is visible to every user)
        async with stdio_session(db_url, tmp_path, env={"RAGPG_MCP_KEY": corpus.work}) as (s, stderr):
            assert "serving vault work" in stderr_of(stderr) and "API key 'work'" in stderr_of(stderr)
            assert [v["name"] for v in data(await s.call_tool("list_vaults", {}))["vaults"]] == ["work"]
            refused = error_text(await s.call_tool("search_notes", {"query": "tomatoes", "vaults": ["garden"]}))
            assert refused == "error: this key may not read vault 'garden'"
            everything = data(await s.call_tool("search_notes", {"query": "tomatoes meeting watering", "k": 20}))
            assert {h["vault"] for h in everything["passages"]} == {"work"}
            assert WORK_MARK in str(everything)
            assert error_text(await s.call_tool("read_note", {"vault": "garden", "path": "tomatoes.md"})) == \
                "error: this key may not read vault 'garden'"
            # the key is checked on every call: revoked, it reads nothing more
            key_store.revoke_key(conn, "work")
            assert error_text(await s.call_tool("search_notes", {"query": "meeting"})) == \
                "error: invalid or revoked API key"
            with pytest.raises(Exception, match="invalid or revoked API key"):
                await s.read_resource("ragpg://work/meeting.md")
        async with stdio_session(db_url, tmp_path, "--vault", "garden", "--clearance", "internal") as (s, stderr):
            assert "serving vault garden, confidentiality public, internal only" in stderr_of(stderr)
            found = data(await s.call_tool("search_notes", {"query": f"tomatoes roadmap {INTERNAL_MARK}", "k": 20}))
            assert INTERNAL_MARK in str(found) and RESTRICTED_MARK not in str(found)
            assert {h["vault"] for h in found["passages"]} == {"garden"}

    anyio.run(main)


def test_long_notes_and_many_notes_come_in_pieces(db_url: str, corpus: Corpus, tmp_path: Path) -> None:
    small = {"RAGPG_MCP__READ_MAX_CHARS": "60", "RAGPG_MCP__RESOURCES_PAGE_SIZE": "1"}

    async def main() -> None:
        async with stdio_session(db_url, tmp_path, env=small) as (s, _):
            first = data(await s.call_tool("read_note", {"vault": "garden", "path": "tomatoes.md"}))
            assert (first["truncated"], first["next_start_line"], first["end_line"]) == (True, 5, 3)
            rest = data(await s.call_tool("read_note", {"vault": "garden", "path": "tomatoes.md",
                                                        "start_line": first["next_start_line"]}))
            assert rest["text"].startswith("## Watering") and rest["start_line"] == 5
            text = (await s.read_resource("ragpg://garden/tomatoes.md")).contents[0].text
            assert text.startswith("# Tomatoes\n") and "## Watering" not in text
            assert text.endswith("[The note goes on at line 5: read the rest with read_note (vault garden, path "
                                 "tomatoes.md, start_line 5).]")

            uris, cursor = [], None
            while True:
                page = await s.list_resources(params=types.PaginatedRequestParams(cursor=cursor))
                assert len(page.resources) == 1
                uris.append(page.resources[0].uri)
                if page.next_cursor is None:
                    break
                cursor = page.next_cursor
            assert uris == ["ragpg://garden/plans/roadmap.md", "ragpg://garden/plans/secret.md",
                            "ragpg://garden/tomatoes.md", "ragpg://work/meeting.md"]
            with pytest.raises(Exception, match="invalid cursor"):
                await s.list_resources(params=types.PaginatedRequestParams(cursor="not-a-cursor"))
            assert data(await s.call_tool("list_vaults", {}))["vaults"]  # still serving

    anyio.run(main)
