"""The packages say they are typed, and mypy sees them under their installed names (issue #20).

The type check itself runs in .ci/run (`mypy`, configured in pyproject.toml)."""

from __future__ import annotations

import tomllib

from tests.layout.imports import PACKAGES, REPO


def test_every_package_ships_a_py_typed_marker() -> None:
    missing = [folder for folder in PACKAGES.values() if not (REPO / folder / "py.typed").is_file()]
    assert missing == []
    package_data = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"][
        "package-data"]
    assert "py.typed" in package_data["*"]


def test_mypy_sees_cli_and_server_under_their_installed_names() -> None:
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mypy"]
    assert set(config["packages"]) == set(PACKAGES)
    links = REPO / config["mypy_path"]
    for package, folder in PACKAGES.items():
        if package != folder:
            assert (links / package).resolve() == (REPO / folder).resolve()
