"""Bad input to the MCP tools: a tool error (isError) with the one line the CLI prints for the same
input, one bad call after another on one session, and the server keeps serving. Bad flags of
`ragpg mcp` stop it at start with one line and the exit code of that error."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

import rag
from rag.config import Settings
from rag.errors import InputError
from rag.runtime import Runtime
from ragpg_cli.main import main
from tests.mcp.bad_calls import BAD_CALLS, check_bad_calls_then_a_good_one
from tests.mcp.conftest import Corpus
from tests.mcp.session import server_env, stdio_session
from tests.support.cli import ragpg, use_ragpg_env

WITH_CLI = [(tool, args, cli, expected) for tool, args, cli, expected in BAD_CALLS if cli is not None]


def test_bad_calls_in_a_row_then_a_good_one_over_stdio(db_url: str, corpus: Corpus, tmp_path: Path) -> None:
    async def main_() -> None:
        async with stdio_session(db_url, tmp_path) as (session, _):
            await check_bad_calls_then_a_good_one(session)

    anyio.run(main_)


@pytest.mark.parametrize(("tool", "arguments", "cli", "expected"), WITH_CLI, ids=[" ".join(c[2]) for c in WITH_CLI])
def test_the_cli_prints_the_same_line(db_url: str, corpus: Corpus, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str], tool: str, arguments: dict[str, object],
                                      cli: list[str], expected: str) -> None:
    use_ragpg_env(monkeypatch, server_env(db_url, tmp_path))
    code = main(cli)
    assert code != 0
    assert capsys.readouterr().err.strip() == expected


def test_a_bad_filter_is_the_library_s_message(corpus: Corpus, settings: Settings) -> None:
    (args,) = [a for tool, a, _, _ in BAD_CALLS if "filters" in a]
    (expected,) = [e for tool, a, _, e in BAD_CALLS if "filters" in a]
    runtime = Runtime.from_settings(settings, pool_max_size=2)
    try:
        with pytest.raises(InputError) as raised:
            rag.compute_context(str(args["query"]), filters=args["filters"], runtime=runtime)
    finally:
        runtime.close()
    assert f"error: {raised.value}" == expected


@pytest.mark.parametrize(("flags", "key", "code", "line"), [
    (["--vault", "nosuch"], None, 4, "error: unknown vault 'nosuch' (known: garden, work)"),
    (["--clearance", "secret"], None, 2,
     "error: unknown clearance 'secret' (use one of: public, internal, confidential, restricted)"),
    ([], "rpg_not-a-key", 7, "error: invalid or revoked API key"),
    (["--clearance", "restricted"], "garden_public", 7,
     "error: --clearance restricted is above the key's clearance (public); it can only be narrowed"),
    (["--vault", "garden"], "work", 7, "error: this key may not read vault 'garden'"),
])
def test_bad_flags_stop_it_at_start(db_url: str, corpus: Corpus, tmp_path: Path, flags: list[str], key: str | None,
                                    code: int, line: str) -> None:
    env = server_env(db_url, tmp_path)
    if key is not None:
        env["RAGPG_MCP_KEY"] = getattr(corpus, key, key)
    done = ragpg("mcp", *flags, env=env, timeout=60)
    assert (done.returncode, done.stderr.strip().splitlines()) == (code, [line]), done.stderr
    assert done.stdout == ""  # nothing but the protocol ever goes to stdout

