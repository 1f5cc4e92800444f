"""Usage errors (bad option values, missing arguments, unknown commands) are short messages, not tracebacks."""

from __future__ import annotations

import pytest

from ragpg_cli.main import main


@pytest.mark.parametrize("argv, expected", [
    (["ask", "what is this", "--k", "abc"], "Invalid value for '--k'"),
    (["vault", "add"], "Missing argument"),
    (["nosuch"], "No such command"),
    (["index", "--no-such-option"], "No such option"),
])
def test_usage_error_is_a_message_and_exit_2(argv, expected, capsys):
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2
    assert expected in err
    assert "Traceback" not in err
