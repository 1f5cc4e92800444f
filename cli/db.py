"""`ragpg db`: the database lifecycle (embedded server or DATABASE_URL)."""

from __future__ import annotations

import sys

import typer

from rag.store import lexical_backend
from rag.store.database import mask_url, open_connection
from rag.store.locate import embedded_server, resolve_database_url
from ragpg_cli.app import print_json, say, state

app = typer.Typer(help="Start, stop and upgrade the database (embedded PostgreSQL unless DATABASE_URL is set).",
                  no_args_is_help=True)

JSON_HELP = "Print machine-readable JSON."


@app.command()
def start(ctx: typer.Context, json_out: bool = typer.Option(False, "--json", help=JSON_HELP)) -> None:
    """Start (or adopt) the embedded server and bring the schema up to date."""
    settings = state(ctx).settings
    adopted = False
    pid = None
    if settings.database_url:
        url = settings.database_url
    else:
        status = embedded_server(settings).start()
        url, adopted, pid = status.url or "", status.adopted, status.pid
    from rag.store import migrate  # alembic + SQLAlchemy: loaded only by the commands that need them

    revision = migrate.upgrade(url)
    result = {"running": True, "embedded": not settings.database_url, "pid": pid, "adopted": adopted,
              "url": mask_url(url), "revision": revision}
    if json_out:
        print_json(result)
    elif settings.database_url:
        say(f"Using the database at {mask_url(url)}; schema at revision {revision}.")
    else:
        verb = "already running" if adopted else "started"
        say(f"Embedded PostgreSQL {verb} (pid {pid}, data in {settings.pgdata_dir}); "
            f"schema at revision {revision}.")


@app.command()
def stop(ctx: typer.Context) -> None:
    """Stop the embedded server (does nothing for DATABASE_URL)."""
    settings = state(ctx).settings
    if settings.database_url:
        typer.echo("DATABASE_URL is set: ragpg does not manage that server.")
        return
    stopped = embedded_server(settings).stop()
    typer.echo("Embedded PostgreSQL stopped." if stopped else "Embedded PostgreSQL was not running.")


@app.command()
def status(ctx: typer.Context, json_out: bool = typer.Option(False, "--json", help=JSON_HELP)) -> None:
    """Show whether the database is reachable and its schema current. Exit 1 when not running."""
    settings = state(ctx).settings
    result: dict[str, object] = {"embedded": not settings.database_url}
    if settings.database_url:
        url = settings.database_url
    else:
        st = embedded_server(settings).status()
        result.update({"data_dir": str(settings.data_dir), "pgdata_dir": str(settings.pgdata_dir), "pid": st.pid})
        if not st.running or st.url is None:
            result["running"] = False
            _emit_status(result, json_out)
            raise typer.Exit(1)
        url = st.url
    from rag.store import migrate  # alembic + SQLAlchemy: loaded only by the commands that need them

    with open_connection(url, register_vector=False) as conn:
        row = conn.execute(
            "select current_setting('server_version') as server_version,"
            " (select extversion from pg_extension where extname = 'vector') as pgvector"
        ).fetchone()
        assert row is not None  # a select without from returns one row
        revision = migrate.current_revision(conn)
        head = migrate.head_revision()
        backends = lexical_backend.vault_backends(conn) if revision == head else []
    result.update({"running": True, "url": mask_url(url), "server_version": row["server_version"],
                   "pgvector": row["pgvector"], "revision": revision, "head": head,
                   "schema_current": revision == head,
                   "lexical_backends": [b.to_dict() for b in backends]})
    _emit_status(result, json_out)


def _emit_status(result: dict[str, object], json_out: bool) -> None:
    if json_out:
        print_json(result)
        return
    if not result.get("running"):
        typer.echo("Embedded PostgreSQL is not running (start it with `ragpg db start`).")
        return
    schema = "current" if result["schema_current"] else f"at {result['revision']} (head {result['head']}): run `ragpg db upgrade`"
    say(f"Database: {result['url']}")
    typer.echo(f"PostgreSQL {result['server_version']}, pgvector {result['pgvector'] or 'not installed'}")
    typer.echo(f"Schema: {schema}")
    backends = result.get("lexical_backends")
    for b in backends if isinstance(backends, list) else []:
        say(f"Lexical backend of {b['vault']}: {b['backend']} ({b['reason']})")


@app.command()
def url(ctx: typer.Context, masked: bool = typer.Option(False, "--masked", help="Hide any password.")) -> None:
    """Print the connection URL, for psql or another process (starts the embedded server if needed)."""
    value = resolve_database_url(state(ctx).settings)
    typer.echo(mask_url(value) if masked or (sys.stdout.isatty() and ":" in value.split("@")[0][11:]) else value)


@app.command()
def upgrade(ctx: typer.Context, revision: str = typer.Argument("head", help="Target alembic revision."),
            json_out: bool = typer.Option(False, "--json", help=JSON_HELP)) -> None:
    """Create the pgvector extension if allowed, migrate the schema and re-apply SQL functions."""
    target = resolve_database_url(state(ctx).settings)
    from rag.store import migrate  # alembic + SQLAlchemy: loaded only by the commands that need them

    done = migrate.upgrade(target, revision)
    if json_out:
        print_json({"revision": done})
    else:
        typer.echo(f"Schema at revision {done}.")


@app.command("dump-schema")
def dump_schema(ctx: typer.Context,
                output: str = typer.Option("-", "--output", "-o", help="File to write, or - for stdout.")) -> None:
    """Print the schema (pg_dump, deterministic) as db/schema/schema.latest.sql holds it."""
    from rag.store import migrate  # alembic + SQLAlchemy: loaded only by the commands that need them

    text = migrate.dump_schema(resolve_database_url(state(ctx).settings))
    if output == "-":
        sys.stdout.write(text)
    else:
        with open(output, "w", encoding="utf-8") as fh:
            fh.write(text)


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def psql(ctx: typer.Context,
         psql_args: list[str] = typer.Argument(None, help="Arguments for psql, e.g. -c 'select count(*) from "
                                               "chunks' (put -- first to pass psql's own --help).")) -> None:
    """Open psql as the database owner (reads every row): the psql shipped with the embedded server, so no PostgreSQL client needs installing. Exits with psql's code."""
    from ragpg_cli.psql import psql_invocation, run_psql

    url = resolve_database_url(state(ctx).settings)  # starts the embedded server when DATABASE_URL is unset
    raise typer.Exit(run_psql(*psql_invocation(url, [*(psql_args or []), *ctx.args])))


@app.command()
def console(ctx: typer.Context,
            clearance: str = typer.Option(..., "--clearance", help="Highest level the session may read: "
                                          "public, internal, confidential or restricted."),
            vault: list[str] = typer.Option(None, "--vault", help="A vault the session may read (repeat); "
                                            "every vault when left out."),
            json_out: bool = typer.Option(False, "--json", help="Print the login (role, conninfo, valid "
                                          "until) instead of opening psql."),
            with_password: bool = typer.Option(False, "--with-password", help="With --json: include the "
                                               "login's password (shown once, masked otherwise)."),
            psql_args: list[str] = typer.Argument(None, help="Arguments for psql, after --, e.g. "
                                                  "-- -c 'select count(*) from chunks'.")) -> None:
    """Open psql as a role the database itself limits to a clearance and vaults (row-level security)."""
    from ragpg_cli.console import open_console

    code = open_console(state(ctx).settings, clearance, list(vault or []), list(psql_args or []),
                        json_out=json_out, with_password=with_password)
    raise typer.Exit(code)
