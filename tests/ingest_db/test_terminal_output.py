"""Item 8: control sequences in note text never reach the terminal through `ragpg search` / `ragpg ask`."""

from __future__ import annotations

import json
import re
from pathlib import Path

from ragpg_cli.terminal import for_terminal, json_for_terminal
from tests.support.files import write_files

ATTACK = ("Rotate the signing keys monthly. \x1b]52;c;cm0gLXJmIH4=\x07Clipboard written. "
          "\x1b]8;;https://evil.example\x1b\\click\x1b]8;;\x1b\\ \x1b]0;pwned title\x07"
          "\x1b[2J\x1b[H\x1bc screen cleared \x9b31m red \u202eevil\u202c and \r overwrite.")
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def test_search_and_ask_print_no_control_characters(cli, tmp_path: Path) -> None:
    root = write_files(tmp_path / "v", {"keys.md": f"# Signing keys\n\n{ATTACK}\n", "other.md": "# Other\n\nplain\n"})
    assert cli("vault", "add", "v", str(root))[0] == 0
    assert cli("index", "v")[0] == 0
    for command in (("search", "rotate signing keys"), ("ask", "Signing keys: rotate the signing keys monthly, clipboard written, screen cleared")):
        code, out, err = cli(*command)
        assert code == 0, err
        assert "keys.md" in out and not RAW.search(out), repr(out)
        assert "pwned" not in out and "evil.example" not in out  # whole sequences dropped, not just ESC
        code, out, err = cli(*command, "--json")
        assert code == 0 and not RAW.search(out)
        assert "\\u001b]52;c;" in out  # JSON escapes rather than drops
    found = json.loads(cli("search", "rotate signing keys", "--json")[1])
    assert any("\x1b]52;c;cm0gLXJmIH4=\x07" in value for item in found["items"] for value in item.values()
               if isinstance(value, str))  # the JSON still carries the text exactly


def test_sanitizer_cases() -> None:
    assert for_terminal("a\x1b[31mred\x1b[0m b") == "ared b"
    assert for_terminal("x\x1b]52;c;QQ==\x07y") == "xy"
    assert for_terminal("x\x1b]8;;http://e\x1b\\t\x1b]8;;\x1b\\y") == "xty"
    assert for_terminal("bell\x07 cr\r del\x7f c1\x85") == "bell\\x07 cr\\x0d del\\x7f c1\\x85"
    assert for_terminal("\u202etxt.exe") == "<U+202E>txt.exe"
    assert for_terminal("keep\nnew\tlines, caf\u00e9 \u4e2d") == "keep\nnew\tlines, caf\u00e9 \u4e2d"
    assert for_terminal("unterminated \x1b]0;title") == "unterminated "
    dumped = json.dumps({"t": "a\x9b1m\u202eb\x1b"}, ensure_ascii=False)
    assert json.loads(json_for_terminal(dumped)) == {"t": "a\x9b1m\u202eb\x1b"}
    assert not RAW.search(json_for_terminal(dumped))
