"""An index run never crashes on a vault and never empties one by accident (issue 29): a folder nested
500 deep indexes, a vault that fails does not stop the vaults after it, and a vault root that is empty
(an unmounted share) or lost its `.obsidian` marker removes nothing unless `--allow-empty` confirms."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import psycopg
import pytest

from rag.ingest import pipeline
from tests.support.files import write_files

DEEP = "/".join(["d"] * 500)


def stored_paths(conn: psycopg.Connection, vault: str) -> set[str]:
    rows = conn.execute("select d.source_path from documents d join vaults v on v.id = d.vault_id "
                        "where v.name = %s", (vault,)).fetchall()
    return {r["source_path"] for r in rows}


def found(cli, query: str, vault: str) -> set[str]:
    code, out, err = cli("search", query, "--vault", vault, "--json")
    assert code == 0, err
    return {i["source_path"] for i in json.loads(out)["items"]}


@pytest.mark.security
def test_a_folder_nested_500_deep_indexes(aconn: psycopg.Connection, cli, tmp_path: Path) -> None:
    root = write_files(tmp_path / "deep", {f"{DEEP}/bottom.md": "The walnut grove at the bottom.\n"})
    after = write_files(tmp_path / "later", {"l.md": "The walnut grove of the later vault.\n"})
    assert cli("vault", "add", "deep", str(root))[0] == 0
    assert cli("vault", "add", "later", str(after))[0] == 0
    code, out, err = cli("index")
    assert code == 0, err
    assert stored_paths(aconn, "deep") == {f"{DEEP}/bottom.md"} and stored_paths(aconn, "later") == {"l.md"}
    assert found(cli, "walnut grove", "deep") == {f"{DEEP}/bottom.md"}


@pytest.mark.security
@pytest.mark.parametrize("command", [("index",), ("reindex",)])
def test_a_vault_that_crashes_does_not_stop_the_ones_after_it(aconn: psycopg.Connection, cli, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch,
                                                              command: tuple[str, ...]) -> None:
    for name in ("a", "b", "c"):
        root = write_files(tmp_path / name, {f"{name}.md": f"The walnut grove of vault {name}.\n"})
        assert cli("vault", "add", name, str(root))[0] == 0
    real = pipeline.discover

    def discover(vault, settings):
        if vault.name in ("a", "b"):
            raise RecursionError("maximum recursion depth exceeded")  # any error nobody planned for
        return real(vault, settings)

    monkeypatch.setattr(pipeline, "discover", discover)
    code, out, err = cli(*command)
    assert code == 1, (out, err)
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 2 and all("RecursionError" in line for line in errors), err
    assert errors[0].startswith("error: vault 'a': ") and errors[1].startswith("error: vault 'b': ")
    assert "Traceback" not in err
    assert stored_paths(aconn, "c") == {"c.md"}  # the vault after them was indexed


# --- an empty root, or one that lost its marker, removes nothing unless confirmed ------------------------

NOTES = {"one.md": "The walnut grove, note one.\n", "sub/two.md": "The walnut grove, note two.\n"}


def indexed(aconn: psycopg.Connection, cli, tmp_path: Path, files: dict[str, str]) -> Path:
    root = write_files(tmp_path / "v", files)
    assert cli("vault", "add", "v", str(root))[0] == 0
    assert cli("index", "v")[0] == 0
    assert stored_paths(aconn, "v") == {p for p in files if p.endswith(".md") and not p.startswith(".")}
    return root


def empty(root: Path) -> None:
    for child in root.iterdir():
        shutil.rmtree(child) if child.is_dir() else child.unlink()


@pytest.mark.security
@pytest.mark.parametrize("command", [("index", "v"), ("reindex",)])
def test_an_empty_root_is_treated_as_unavailable(aconn: psycopg.Connection, cli, tmp_path: Path,
                                                 command: tuple[str, ...]) -> None:
    root = indexed(aconn, cli, tmp_path, NOTES)
    empty(root)  # what an unmounted network share looks like
    code, out, err = cli(*command)
    assert code != 0, out
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "is empty" in errors[0] and "nothing was deleted" in errors[0]
    assert "--allow-empty" in errors[0]
    assert stored_paths(aconn, "v") == set(NOTES) and found(cli, "walnut grove", "v") == set(NOTES)

    code, out, err = cli(*command, "--allow-empty")  # the user confirms the notes are really gone
    assert code == 0, err
    assert stored_paths(aconn, "v") == set()


@pytest.mark.security
def test_a_root_that_lost_its_obsidian_marker_is_treated_as_unavailable(aconn: psycopg.Connection, cli,
                                                                         tmp_path: Path) -> None:
    root = indexed(aconn, cli, tmp_path, {**NOTES, ".obsidian/app.json": "{}"})
    shutil.rmtree(root / ".obsidian")
    (root / "one.md").unlink()  # a different folder mounted there, or a sync half done
    code, out, err = cli("index", "v")
    assert code != 0, out
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and ".obsidian" in errors[0] and "--allow-empty" in errors[0], err
    assert stored_paths(aconn, "v") == set(NOTES)

    assert cli("index", "v", "--allow-empty")[0] == 0
    assert stored_paths(aconn, "v") == {"sub/two.md"}
    assert cli("index", "v")[0] == 0  # the marker's absence is now what the vault looks like


def test_an_empty_vault_that_never_held_notes_indexes_quietly(aconn: psycopg.Connection, cli,
                                                              tmp_path: Path) -> None:
    (tmp_path / "v").mkdir()
    assert cli("vault", "add", "v", str(tmp_path / "v"))[0] == 0
    code, out, err = cli("index", "v")
    assert code == 0, err


@pytest.mark.security
@pytest.mark.parametrize("command", [("index", "v"), ("reindex",)])
def test_a_root_replaced_by_a_folder_holding_a_readme_is_treated_as_unavailable(
        aconn: psycopg.Connection, cli, tmp_path: Path, command: tuple[str, ...]) -> None:
    """Issue 47: a folder holding one README.md in the root's place passed the empty-root guard ("2 removed",
    exit 0): more than ingest.max_gone_share of the indexed files gone in one run is refused too."""
    root = indexed(aconn, cli, tmp_path, NOTES)
    empty(root)
    write_files(root, {"README.md": "# Mount point\nThe share is mounted here.\n"})
    code, out, err = cli(*command)
    assert code != 0, out
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "no longer holds 2 of the 2 files" in errors[0], err
    assert "nothing was deleted" in errors[0] and "--allow-empty" in errors[0]
    assert stored_paths(aconn, "v") == set(NOTES)

    assert cli(*command, "--allow-empty")[0] == 0
    assert stored_paths(aconn, "v") == {"README.md"}


def test_removing_up_to_the_share_needs_no_confirmation(aconn: psycopg.Connection, cli, tmp_path: Path) -> None:
    files = {f"n{i}.md": f"The walnut grove, note {i}.\n" for i in range(4)}
    root = indexed(aconn, cli, tmp_path, files)
    for name in ("n0.md", "n1.md"):  # half of them: what a user tidying up does
        (root / name).unlink()
    code, out, err = cli("index", "v")
    assert code == 0, err
    assert stored_paths(aconn, "v") == {"n2.md", "n3.md"}
