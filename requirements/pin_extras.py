"""Add a hashed `name[extra]==version` line beside each locked package another one needs with an extra.

pip before 23.3 (the pip that `python3 -m venv` brings with Python 3.11's ensurepip, 23.2.1) treats a
dependency's extra (`litellm` needs `httpx[http2]`) as a requirement of its own, and in
`--require-hashes` mode refuses it as unpinned unless the lock names it pinned. pip-compile writes
either the plain names (`--strip-extras`, which newer pips need for plain requirements) or the
names with extras; the lock needs both. Run after pip-compile (pip-tools installed):

    python requirements/pin_extras.py requirements/dev.lock [pip-compile options...]

It runs the same pip-compile again without `--strip-extras` into a temporary file to learn which
extras are asked for, then copies each base line's pin and hashes under the name with its extras.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

_HEADER_COMMAND = re.compile(r"^#\s+(pip-compile .+)$", re.M)
_EXTRA_PIN = re.compile(r"^([A-Za-z0-9_.-]+)\[([^\]]+)\]==(\S+)", re.M)


def _block(lock_text: str, name: str, version: str) -> str:
    """The base line of `name==version` with its hash lines."""
    pattern = re.compile(
        rf"^{re.escape(name)}=={re.escape(version)} \\\n(?:    --hash=\S+(?: \\)?\n)+", re.M | re.I
    )
    found = pattern.search(lock_text)
    if found is None:
        raise SystemExit(f"pin_extras: {name}=={version} is not a line of the lock")
    return found.group(0)


def extras_asked(lock: Path) -> list[tuple[str, str, str]]:
    """(name, extras, version) for every extra pip-compile keeps when not told to strip them."""
    command = _HEADER_COMMAND.search(lock.read_text())
    if command is None:
        raise SystemExit(f"pin_extras: {lock} has no pip-compile command in its header")
    args = [a for a in shlex.split(command.group(1)) if a != "--strip-extras"]
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp, "with-extras.lock")
        # pip-compile keeps the pins of an existing output file: start from the lock itself
        out.write_text(lock.read_text())
        args = [a if not a.startswith("--output-file=") else f"--output-file={out}" for a in args]
        subprocess.run([*args, "--quiet"], check=True)
        return [(m[0], m[1], m[2]) for m in _EXTRA_PIN.findall(out.read_text())]


def pin_extras(lock_text: str, extras: list[tuple[str, str, str]]) -> str:
    """The lock with a `name[extras]==version` copy of each base block, written once."""
    for name, extra, version in extras:
        base = _block(lock_text, name, version)
        copy = base.replace(f"{name}=={version}", f"{name}[{extra}]=={version}", 1)
        if copy not in lock_text:
            lock_text = lock_text.replace(base, base + copy, 1)
    return lock_text


def main(argv: list[str]) -> int:
    lock = Path(argv[1])
    lock.write_text(pin_extras(lock.read_text(), extras_asked(lock)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
