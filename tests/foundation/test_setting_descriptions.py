"""Every setting says what it does: a description on every field of Settings (each group and each of
its fields) and of a retrieval profile, printed by `ragpg config show` (text and --json) and
`ragpg config init`, whose file loads back as exactly the defaults once every setting is uncommented."""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import BaseModel

from rag.config import Settings, load_settings
from rag.config_profiles import Profile
from ragpg_cli.config_init import default_config_text
from ragpg_cli.main import main
from tests.support.cli import use_ragpg_env

REPO = Path(__file__).resolve().parents[2]
SETTING_LINE = re.compile(r"^#(?P<key>[A-Za-z_][A-Za-z0-9_]*) = ")


def _fields(model: type[BaseModel], prefix: str = "") -> Iterator[tuple[str, str | None]]:
    for name, field in model.model_fields.items():
        yield f"{prefix}{name}", field.description
        group = field.annotation
        if isinstance(group, type) and issubclass(group, BaseModel):
            yield from _fields(group, f"{prefix}{name}.")


def _leaves() -> list[str]:
    return [name for name, _ in _fields(Settings) if not _is_group(name)]


def _is_group(dotted: str) -> bool:
    field = Settings.model_fields.get(dotted)
    return field is not None and isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel)


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    use_ragpg_env(monkeypatch, {})
    return tmp_path / "ragpg.toml"


def test_every_setting_and_group_has_a_description() -> None:
    names = dict(_fields(Settings))
    assert len(names) > 100  # every group and every field of each, not only the top level
    missing = sorted(name for name, text in names.items() if not (text or "").strip())
    assert missing == []


def test_every_profile_key_has_a_description() -> None:
    missing = sorted(name for name, text in _fields(Profile) if not (text or "").strip())
    assert missing == []


def test_init_explains_every_setting_and_loads_back_as_the_defaults(clean_env: Path) -> None:
    text = default_config_text()
    tomllib.loads(text)  # valid as written: everything commented out
    for name, description in _fields(Settings):
        first_words = " ".join((description or "").split()[:6])
        assert first_words and first_words in " ".join(text.replace("\n# ", " ").split()), name
    # Uncomment every setting line: the file sets every setting, each to its default.
    uncommented = "\n".join(line[1:] if SETTING_LINE.match(line) else line for line in text.splitlines())
    data = tomllib.loads(uncommented)
    set_keys = {f"{group}.{key}" for group, table in data.items() if isinstance(table, dict) for key in table}
    set_keys |= {key for key, value in data.items() if not isinstance(value, dict)}
    unset = {name for name in _leaves() if _default(name) is None}  # no TOML null: described, not written
    assert set_keys == set(_leaves()) - unset - {"profiles"}  # profiles: explained by the example below
    clean_env.write_text(uncommented, encoding="utf-8")
    assert load_settings(clean_env) == load_settings(clean_env.parent / "absent.toml")


def _default(dotted: str) -> object:
    node: object = Settings.model_construct()
    for part in dotted.split("."):
        node = getattr(node, part)
    return node


def test_init_lists_every_profile_key_and_names_only_files_that_exist() -> None:
    text = default_config_text()
    for key in Profile.model_fields:
        if key != "name":
            assert re.search(rf"^# {key} = ", text, re.MULTILINE), key
    named = set(re.findall(r"[\w./-]+\.(?:py|md|toml|yaml)\b", text))
    assert named and {n for n in named if not (REPO / n).exists()} == set()


def test_show_prints_descriptions(clean_env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["--config", str(clean_env), "config", "show", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    rows = {r["name"]: r for r in json.loads(out)["settings"]}
    described = dict(_fields(Settings))
    assert set(rows) == set(_leaves())
    # each on one line (a docstring's line breaks are where its source wrapped)
    assert all(rows[name]["description"] == " ".join((described[name] or "").split()) for name in rows)
    code = main(["--config", str(clean_env), "config", "show"])
    human, _ = capsys.readouterr()
    assert code == 0
    flat = " ".join(human.split())
    for name in ("embedding.model", "retrieval.rrf_k", "notes.k_normal", "server.auth"):
        assert " ".join((described[name] or "-").split()) in flat, name
