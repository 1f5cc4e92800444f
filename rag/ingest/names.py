"""File names that are not valid UTF-8, stored losslessly as valid text.

Python lists such names with each undecodable byte as a lone surrogate (U+DC80..U+DCFF,
"surrogateescape"), which Postgres text and JSON cannot hold: one such name used to abort the whole
run. Stored form: each undecodable byte becomes U+FFFD (the replacement character, so people see
that something was lost in display) followed by the byte in two hex digits; a literal U+FFFD in a
name is doubled, so the mapping is reversible and two different names never store the same.
Valid UTF-8 names without U+FFFD — nearly all — are stored unchanged.
"""

from __future__ import annotations

import re

ESCAPE = "\ufffd"
_NEEDS_ESCAPE = re.compile("[\udc80-\udcff\ufffd]")
_STORED_ESCAPE = re.compile("\ufffd(\ufffd|[0-9A-F]{2})")


def stored_name(name: str) -> str:
    """The text stored for a surrogate-escaped file name (or rel path)."""
    return _NEEDS_ESCAPE.sub(_escape, name)


def _escape(m: re.Match[str]) -> str:
    ch = m.group(0)
    return ESCAPE * 2 if ch == ESCAPE else f"{ESCAPE}{ord(ch) - 0xDC00:02X}"


def disk_name(stored: str) -> str:
    """The inverse of `stored_name`: the surrogate-escaped name, for os functions."""
    return _STORED_ESCAPE.sub(lambda m: ESCAPE if m.group(1) == ESCAPE else chr(0xDC00 + int(m.group(1), 16)),
                              stored)


def disk_bytes(stored: str) -> bytes:
    """The file name's bytes on disk."""
    return disk_name(stored).encode("utf-8", "surrogateescape")
