"""Issue 29: the SECURITY DEFINER functions behind row-level security cannot be steered.

A console role of clearance public creates temp tables, functions, operators and types named like
everything the scope functions use (`ragpg_console_roles`, `vaults`, `ragpg_level_rank`, `=` ...) and
reads no more than before (console logins have no TEMPORARY privilege since issue 47: these tests give
it back, as a database whose owner granted it again would); every definer function pins its search path (pg_catalog first, pg_temp
last) and belongs to a role that is neither a superuser nor able to log in.
"""

from __future__ import annotations

import psycopg
import pytest

from tests.ingest_db.test_row_security import PUBLIC_NOTES, QUERY, console_conn, indexed  # noqa: F401

pytestmark = [pytest.mark.security, pytest.mark.usefixtures("indexed")]

PINNED_PATH = "search_path=pg_catalog, public, pg_temp"

# Every shadow a session of its own can make: tables and types are looked up in pg_temp first unless
# the path names it; functions and operators only when qualified (they are made all the same).
SHADOWS = [
    "create temp table ragpg_console_roles (role_name name, clearance text, vaults text[], created_at timestamptz)",
    "insert into ragpg_console_roles values (current_user, 'restricted', null, now())",
    "create temp table vaults (id bigint, name text, root_path text, text_search_config regconfig)",
    "insert into vaults select g, n, '/x', 'english' from generate_series(1, 200) g, unnest(array['notes', 'other']) n",
    "create temp table chunks (id bigint, vault_id bigint, metadata jsonb)",
    "create temp table documents (id bigint, vault_id bigint, confidentiality text)",
    "create function pg_temp.ragpg_level_rank(text) returns integer language sql return 1",
    "create function pg_temp.ragpg_scope_clearance_rank(name) returns integer language sql return 4",
    "create function pg_temp.current_setting(text, boolean) returns text language sql return 'restricted'",
    "create function pg_temp.array_position(text[], text) returns integer language sql return 1",
    "create function pg_temp.least(integer, integer) returns integer language sql return 4",
    "create function pg_temp.jsonb_array_elements_text(jsonb) returns setof text language sql "
    "as $$select unnest(array['notes', 'other'])$$",
    "create function pg_temp.yes(name, name) returns boolean language sql return true",
    "create operator pg_temp.= (leftarg = name, rightarg = name, function = pg_temp.yes)",
    "create function pg_temp.yes_text(text, text) returns boolean language sql return true",
    "create operator pg_temp.= (leftarg = text, rightarg = text, function = pg_temp.yes_text)",
    "create function pg_temp.yes_int(integer, integer) returns boolean language sql return true",
    "create operator pg_temp.<= (leftarg = integer, rightarg = integer, function = pg_temp.yes_int)",
    "create domain pg_temp.jsonb as text",
    "create domain pg_temp.regclass as text",
]


def visible(conn: psycopg.Connection) -> dict[str, object]:
    """What the role reads straight from the tables (the policies call the scope functions)."""
    return {
        "documents": {(r["vault"], r["source_path"]) for r in conn.execute(
            "select v.name as vault, d.source_path from public.documents d join public.vaults v on v.id = d.vault_id")},
        "levels": {r["level"] for r in conn.execute(
            "select distinct metadata ->> 'confidentiality' as level from public.chunks")},
        "vaults": {r["name"] for r in conn.execute("select name from public.vaults")},
        "rank": conn.execute("select public.ragpg_scope_clearance_rank(current_user) as r").fetchone()["r"],
    }


def lexical_hits(conn: psycopg.Connection) -> set[tuple[str, str]]:
    return {(r["vault"], r["source_path"]) for r in conn.execute(
        "select * from public.match_lexical_chunks(%s, 50)", (QUERY,))}


def shadow(conn: psycopg.Connection) -> None:
    for statement in SHADOWS:
        conn.execute(statement)


def test_every_definer_function_pins_its_path_and_is_owned_by_an_unprivileged_role(
        aconn: psycopg.Connection) -> None:
    rows = aconn.execute("""
        select p.oid::regprocedure::text as fn, coalesce(p.proconfig, '{}') as config, r.rolname as owner,
               r.rolsuper as superuser, r.rolcanlogin as login, r.rolbypassrls as bypass
        from pg_proc p join pg_roles r on r.oid = p.proowner
        where p.prosecdef and p.pronamespace not in ('pg_catalog'::regnamespace, 'information_schema'::regnamespace)
        order by 1""").fetchall()
    names = {r["fn"].split("(")[0] for r in rows}
    assert {"ragpg_scope_clearance_rank", "ragpg_scope_vault_ids"} <= names
    for r in rows:
        assert PINNED_PATH in r["config"], f"{r['fn']} runs with {r['config']}"
        assert not (r["superuser"] or r["login"] or r["bypass"]), f"{r['fn']} is owned by {r['owner']}"
    # nothing else reads with its owner's rights: every view runs as the invoker
    owners_views = aconn.execute("""
        select c.relname from pg_class c
        where c.relkind in ('v', 'm') and c.relnamespace = 'public'::regnamespace
          and not coalesce(c.reloptions @> array['security_invoker=true'], false)""").fetchall()
    assert owners_views == []


def allow_temp(owner: psycopg.Connection, conn: psycopg.Connection) -> None:
    """Give the console role temporary objects again (taken from it by ragpg_close_console_write_paths)."""
    role = conn.execute("select current_user as r").fetchone()["r"]
    owner.execute(psycopg.sql.SQL("grant temporary on database {} to {}").format(
        psycopg.sql.Identifier(owner.info.dbname), psycopg.sql.Identifier(role)))


def test_temp_objects_do_not_steer_the_scope(cli, aconn: psycopg.Connection) -> None:
    with console_conn(cli, "--clearance", "public", "--vault", "notes") as conn:
        before = visible(conn)
    assert before["documents"] == PUBLIC_NOTES and before["levels"] == {"public"}
    assert before["rank"] == 1 and before["vaults"] == {"notes"}

    # a fresh session: the shadows exist before any plan of the scope functions is cached
    with console_conn(cli, "--clearance", "public", "--vault", "notes") as conn:
        allow_temp(aconn, conn)
        shadow(conn)
        assert visible(conn) == before
        assert lexical_hits(conn) == PUBLIC_NOTES
        with pytest.raises(psycopg.errors.InsufficientPrivilege):  # nothing of its own in public
            conn.execute("create table public.ragpg_console_roles_x (x int)")


def test_a_temp_vaults_table_alone_widens_nothing(cli, aconn: psycopg.Connection) -> None:
    with console_conn(cli, "--clearance", "public", "--vault", "notes") as conn:
        allow_temp(aconn, conn)
        conn.execute("create temp table vaults (id bigint, name text)")
        conn.execute("insert into vaults select g, 'notes' from generate_series(1, 200) g")
        found = visible(conn)
        assert found["documents"] == PUBLIC_NOTES and found["vaults"] == {"notes"}
        assert lexical_hits(conn) == PUBLIC_NOTES


def test_the_scope_functions_answer_only_for_the_calling_role(cli) -> None:
    """A console role asking the scope functions about another role (the server's reader, with its own
    `ragpg.vaults` guess, or another console login) learns nothing: no vault ids, no clearance."""
    with console_conn(cli, "--clearance", "internal", "--vault", "other"):
        pass  # a second console login exists, bound to the other vault
    with console_conn(cli, "--clearance", "public", "--vault", "notes") as conn:
        conn.execute("""set ragpg.vaults = '["other"]'""")
        conn.execute("set ragpg.clearance = 'restricted'")
        assert conn.execute("select ragpg_scope_vault_ids('ragpg_reader') as ids").fetchone()["ids"] == []
        assert conn.execute("select ragpg_scope_clearance_rank('ragpg_reader') as r").fetchone()["r"] == 0
        conn.execute("reset ragpg.vaults")
        conn.execute("reset ragpg.clearance")
        others = conn.execute("""
            select rolname, ragpg_scope_clearance_rank(rolname) as rank, ragpg_scope_vault_ids(rolname) as ids
            from pg_roles where rolname like 'ragpg\\_console\\_%' and rolname <> current_user""").fetchall()
        assert others and all(r["rank"] == 0 and r["ids"] == [] for r in others), others
        mine = conn.execute("select ragpg_scope_clearance_rank(current_user) as rank, "
                            "ragpg_scope_vault_ids(current_user) as ids").fetchone()
        assert mine["rank"] == 1 and len(mine["ids"]) == 1  # its own scope, as the policies read it


def test_a_console_role_name_says_nothing_of_its_vaults(cli, aconn: psycopg.Connection) -> None:
    """Role names are readable by every role (pg_roles): a name derived from the vault names would let
    anyone test guesses at another login's vaults offline."""
    with console_conn(cli, "--clearance", "public", "--vault", "notes"):
        pass
    with console_conn(cli, "--clearance", "public", "--vault", "notes", "--vault", "other"):
        pass
    rows = aconn.execute("select role_name, vaults from ragpg_console_roles where vaults is not null").fetchall()
    assert len(rows) == 2
    for r in rows:
        guessed = aconn.execute("select left(md5(array_to_string(%s::text[], chr(31))), 10) as h",
                                (sorted(r["vaults"]),)).fetchone()["h"]
        assert guessed not in r["role_name"], r
    # the same scope again is the same login (its password renewed), not a new role
    with console_conn(cli, "--clearance", "public", "--vault", "notes"):
        pass
    assert aconn.execute("select count(*) as n from ragpg_console_roles where vaults is not null").fetchone()["n"] == 2


def test_a_login_named_after_its_vaults_is_renamed_at_upgrade(cli, aconn: psycopg.Connection) -> None:
    from rag.store.migrate import apply_sql_files

    legacy = aconn.execute("select format('ragpg_console_public_%s', left(md5('notes'), 10)) as n").fetchone()["n"]
    aconn.execute(f'create role "{legacy}" login noinherit')  # noqa: S608 - a fixed name
    aconn.execute("insert into ragpg_console_roles (role_name, clearance, vaults) values (%s, 'public', '{notes}')",
                  (legacy,))
    aconn.commit()
    apply_sql_files(aconn)
    aconn.commit()
    names = [r["role_name"] for r in aconn.execute("select role_name from ragpg_console_roles")]
    assert len(names) == 1 and names[0] != legacy and names[0].startswith("ragpg_console_public_")
    assert aconn.execute("select count(*) as n from pg_roles where rolname = %s", (legacy,)).fetchone()["n"] == 0
    assert aconn.execute("select count(*) as n from pg_roles where rolname = %s", (names[0],)).fetchone()["n"] == 1
    with console_conn(cli, "--clearance", "public", "--vault", "notes") as conn:  # the same scope: that login
        assert conn.execute("select current_user as u").fetchone()["u"] == names[0]
