"""Text from notes, made safe to print on a terminal.

Note text is untrusted: an escape sequence in a note could write the clipboard (OSC 52), plant a
link (OSC 8), retitle the window or clear the screen when `ragpg search` prints it. Human output
therefore drops whole escape sequences (ESC or 8-bit C1 introduced: CSI, OSC, DCS, ...) and shows
any control character left (C0 except newline and tab, DEL, C1) and every bidi override as a
visible escape such as `\\x07` or `<U+202E>`. JSON output keeps JSON's own escaping, plus `\\uXXXX`
for C1 and bidi characters, which JSON would otherwise print raw.
"""

from __future__ import annotations

import re

# ESC [ ... final | 8-bit CSI: control sequences (colours, cursor moves, screen clears).
_CSI = r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]"
# ESC ] / P / X / ^ / _ (and their 8-bit forms) up to BEL or the string terminator (ESC \ or \x9c):
# OSC (titles, clipboard, hyperlinks), DCS, SOS, PM, APC. An unterminated one runs to the end.
_STRING = r"(?:\x1b[\]PX^_]|[\x9d\x90\x98\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c|$)"
# Any other two-character escape (ESC 7, ESC c = full reset, ESC ( B charset, ...).
_ESC_OTHER = r"\x1b[ -/]*[0-~]"
_SEQUENCE = re.compile(f"{_CSI}|{_STRING}|{_ESC_OTHER}")
_BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
_CONTROL = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_BIDI}]")
_JSON_RAW = re.compile(f"[\x7f-\x9f{_BIDI}]")


def _visible(m: re.Match[str]) -> str:
    ch = m.group(0)
    return f"<U+{ord(ch):04X}>" if ch in _BIDI else f"\\x{ord(ch):02x}"


def for_terminal(text: str) -> str:
    """`text` with escape sequences removed and other control and bidi characters made visible."""
    return _CONTROL.sub(_visible, _SEQUENCE.sub("", text))


def json_for_terminal(dumped: str) -> str:
    """A json.dumps(ensure_ascii=False) result with the characters JSON leaves raw escaped as \\uXXXX.

    These characters can only occur inside JSON strings, where the escape means the same value."""
    return _JSON_RAW.sub(lambda m: f"\\u{ord(m.group(0)):04x}", dumped)
