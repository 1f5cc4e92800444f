from rag.store.migrate import head_revision


def test_template_database_is_migrated(conn):
    row = conn.execute("select version_num from alembic_version").fetchone()
    assert row["version_num"] == head_revision()
    ext = conn.execute("select extversion from pg_extension where extname = 'vector'").fetchone()
    assert ext["extversion"].startswith("0.")
