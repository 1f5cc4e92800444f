"""The locks: requirements/dev.lock is what CI and a developer install (`pip install --require-hashes
-r requirements/dev.lock`): every dependency pyproject.toml names, with every extra; requirements/
server.lock is what the image installs: the library, the server (with /mcp), Langfuse and the BM25
index. Each pin satisfies pyproject's specifier and carries hashes. Regenerate a lock with the command in its
header. The image's build context leaves out what it does not need (.dockerignore)."""

from __future__ import annotations

import fnmatch
import os
import re
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
LOCKS = {"dev.lock": ("server", "langfuse", "eval", "bm25", "mcp", "pdf", "dev"),
         "server.lock": ("server", "langfuse", "bm25", "mcp")}


def _pins(lock: str) -> dict[str, tuple[str, int]]:
    """name -> (version, number of hashes)"""
    pins: dict[str, tuple[str, int]] = {}
    for block in re.split(r"\n(?=[A-Za-z0-9])", (ROOT / "requirements" / lock).read_text()):
        head = re.match(r"([A-Za-z0-9._-]+)==([^\s\\;]+)", block)
        if head:
            pins[canonicalize_name(head[1])] = (head[2], block.count("--hash=sha256:"))
    return pins


def _declared(extras: tuple[str, ...]) -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    every = [*project["dependencies"], *(r for extra in extras for r in project["optional-dependencies"][extra])]
    return [r for r in map(Requirement, every) if canonicalize_name(r.name) != "ragpg"]


@pytest.mark.parametrize("lock", sorted(LOCKS))
def test_every_declared_dependency_is_pinned_with_hashes(lock: str) -> None:
    pins = _pins(lock)
    for requirement in _declared(LOCKS[lock]):
        name = canonicalize_name(requirement.name)
        if requirement.marker is not None and not requirement.marker.evaluate():
            continue  # e.g. the bm25 extra off Linux x86-64
        assert name in pins, f"{name} is not in requirements/{lock}: regenerate it"
        version, hashes = pins[name]
        assert requirement.specifier.contains(version, prereleases=True), f"{name}=={version} vs {requirement}"
        assert hashes >= 1, f"{name} has no hash in the lock"


@pytest.mark.parametrize("lock", sorted(LOCKS))
def test_every_pin_has_a_hash(lock: str) -> None:
    pins = _pins(lock)
    assert len(pins) > 50  # the parse found the lock's entries
    assert all(hashes >= 1 for _, hashes in pins.values())


def test_the_two_locks_agree_and_the_image_has_no_dev_tools() -> None:
    dev, server = _pins("dev.lock"), _pins("server.lock")
    assert {name: pin[0] for name, pin in server.items()} == {name: dev[name][0] for name in server}
    assert not {"pytest", "mypy", "selenium", "schemathesis"} & set(server)


def _docker_context(ignore: list[str]) -> list[Path]:
    """The files `docker build .` sends, for the pattern forms .dockerignore uses here."""
    def ignored(rel: str) -> bool:
        return any(fnmatch.fnmatch(rel, p) or fnmatch.fnmatch(rel, p.removeprefix("**/"))
                   or any(fnmatch.fnmatch(part, p.removeprefix("**/")) for part in rel.split("/"))
                   for p in ignore)

    kept: list[Path] = []
    for folder, dirs, files in os.walk(ROOT):
        rel = Path(folder).relative_to(ROOT).as_posix()
        dirs[:] = [d for d in dirs if not ignored(f"{rel}/{d}".lstrip("./") if rel != "." else d)]
        kept.extend(Path(folder, f) for f in files
                    if not ignored(f"{rel}/{f}".lstrip("./") if rel != "." else f))
    return kept


def test_the_image_context_leaves_out_venvs_and_history() -> None:
    ignore = [line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()
              if line.strip() and not line.startswith("#")]
    kept = _docker_context(ignore)
    names = {p.relative_to(ROOT).parts[0] for p in kept}
    assert {"rag", "db", "server", "cli", "pyproject.toml", "requirements"} <= names
    assert not {".git", ".venv", "venv", "tests", "bench"} & names
    assert sum(p.stat().st_size for p in kept) < 20 * 1024 * 1024  # the sources and the lock, not a venv


def _extra_pins(lock: str) -> dict[tuple[str, frozenset[str]], tuple[str, frozenset[str]]]:
    """(name, extras) -> (version, hashes) for the lock's `name[extras]==version` lines"""
    pins: dict[tuple[str, frozenset[str]], tuple[str, frozenset[str]]] = {}
    for block in re.split(r"\n(?=[A-Za-z0-9])", (ROOT / "requirements" / lock).read_text()):
        head = re.match(r"([A-Za-z0-9._-]+)\[([^\]]+)\]==([^\s\\;]+)", block)
        if head:
            extras = frozenset(e.strip() for e in head[2].split(","))
            pins[(canonicalize_name(head[1]), extras)] = (head[3], frozenset(re.findall(r"sha256:\w+", block)))
    return pins


def _base_hashes(lock: str, name: str, version: str) -> frozenset[str]:
    text = (ROOT / "requirements" / lock).read_text()
    for block in re.split(r"\n(?=[A-Za-z0-9])", text):
        head = re.match(r"([A-Za-z0-9._-]+)==([^\s\\;]+)", block)
        if head and canonicalize_name(head[1]) == name and head[2] == version:
            return frozenset(re.findall(r"sha256:\w+", block))
    return frozenset()


@pytest.mark.parametrize("lock", sorted(LOCKS))
def test_each_extra_line_repeats_its_base_pin_and_hashes(lock: str) -> None:
    extra_pins = _extra_pins(lock)
    assert extra_pins, "no name[extra]==version line: pip 23.2.1 refuses the lock (requirements/pin_extras.py)"
    for (name, _), (version, hashes) in extra_pins.items():
        assert _pins(lock)[name][0] == version, f"{name}[...]=={version} differs from its base pin"
        assert hashes == _base_hashes(lock, name, version), f"{name}[...] hashes differ from its base line"


def test_every_extra_a_locked_package_asks_for_is_pinned_for_old_pips() -> None:
    """pip < 23.3 (ensurepip's 23.2.1 on Python 3.11) treats `httpx[http2]` asked for by litellm as a
    requirement of its own and refuses the lock in hash mode unless a `httpx[http2]==` line pins it.
    Read from the installed packages' own metadata (this venv installed the dev lock)."""
    from importlib import metadata

    from packaging.markers import default_environment

    pins, extra_pins = _pins("dev.lock"), _extra_pins("dev.lock")
    missing: list[str] = []
    for name in pins:
        try:
            requires = metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            continue  # a platform-only pin not installed here
        for requirement in map(Requirement, requires):
            environment = {**default_environment(), "extra": ""}
            if not requirement.extras or (requirement.marker and not requirement.marker.evaluate(environment)):
                continue
            wanted = canonicalize_name(requirement.name)
            if wanted in pins and not any(n == wanted and set(requirement.extras) <= e for n, e in extra_pins):
                missing.append(f"{name} -> {requirement}")
    assert not missing, f"run requirements/pin_extras.py: {missing}"
