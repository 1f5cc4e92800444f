"""The commented config file `ragpg config init` writes: every setting at its default, commented out,
after its description; then every key of a retrieval profile, explained the same way.

The file is valid TOML as written, and with every setting line uncommented (the `#` removed from
each `#name = value` line) it sets every setting to its default. TOML has no null, so a setting unset by
default is described (with an example when it has one), not written.
"""

from __future__ import annotations

import json
import math
import re
import textwrap
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from rag.config import Settings
from rag.config_profiles import BUILTIN_PROFILES, Profile
from rag.config_report import plain
from rag.errors import InputError

WIDTH = 100
INIT_HEADER = """\
# ragpg configuration (TOML). Every setting is listed at its default, commented out, below what it
# does. To set one, delete the '#' at the start of its line and change the value.
# Precedence, highest first: the environment (RAGPG_<NAME>, RAGPG_<GROUP>__<NAME>, e.g.
# RAGPG_EMBEDDING__MODEL=hash; DATABASE_URL), this file, the defaults. `ragpg config show` prints the
# values in force and where each came from.
"""
PROFILE_EXAMPLE = """\
# For example, notes that favour recent meeting notes (front matter `type: meeting`, `date: 2024-05-01`):
#
# [profiles.my_notes]
# base = "notes"
# type_weights = { meeting = 1.2, daily = 0.9 }
# w_freshness = 0.15
# freshness_half_life_days = 180.0
"""


def toml_value(value: Any) -> str:
    """A TOML literal for a plain setting value (bool, number, string, list, table)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float) and not (isinstance(value, float) and not math.isfinite(value)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, Mapping):
        if not value:
            return "{}"
        return "{ " + ", ".join(f"{_toml_key(k)} = {toml_value(v)}" for k, v in value.items()) + " }"
    return json.dumps(str(value))


def _toml_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else json.dumps(key)


def _comment(text: str) -> list[str]:
    return textwrap.wrap(" ".join(text.split()), WIDTH - 2, initial_indent="# ", subsequent_indent="# ",
                         break_on_hyphens=False)


def _setting(name: str, field: FieldInfo, value: Any) -> list[str]:
    lines = ["", *_comment(field.description or "")]
    if value is None:
        if not field.examples:
            return [*lines, "# Unset by default."]
        return [*lines, "# Unset by default; for example:", f"# {name} = {toml_value(field.examples[0])}"]
    return [*lines, f"#{name} = {toml_value(plain(value))}"]


def _group(name: str, field: FieldInfo, model: BaseModel) -> list[str]:
    lines = ["", "", *_comment(f"[{name}]: {field.description}"), f"[{name}]"]
    for key, inner in type(model).model_fields.items():
        lines.extend(_setting(key, inner, getattr(model, key)))
    return lines


def _profiles(field: FieldInfo) -> list[str]:
    chat = Profile()
    lines = ["", "", *_comment(f"[profiles.NAME]: {field.description}"), *_comment(
        "A table named like a built-in profile (" + ", ".join(BUILTIN_PROFILES) + ") adjusts it; any "
        "other name is a new profile, starting from `base` (a profile's name) or else from the chat "
        "profile's values. Every key is optional; the mapping keys (type_weights, persona_weights, "
        "metadata_boost) merge key by key with the base. Pass the name as `profile=` to compute_context, "
        "in POST /v1/context, or as notes.profile."), "#", PROFILE_EXAMPLE.rstrip("\n"), "#",
        *_comment("Every key, at the chat profile's value:")]
    for key, inner in Profile.model_fields.items():
        if key != "name":
            lines.extend(["#", *_comment(inner.description or ""), f"# {key} = {toml_value(plain(getattr(chat, key)))}"])
    return lines


def default_config_text() -> str:
    """The whole commented config file (valid TOML as it stands, and with any setting uncommented)."""
    defaults = Settings.model_construct()  # the defaults only: no environment, no file
    lines = [INIT_HEADER.rstrip("\n")]
    groups: list[str] = []
    for name, field in Settings.model_fields.items():
        value = getattr(defaults, name)
        if name == "profiles":
            continue
        if isinstance(value, BaseModel):
            groups.extend(_group(name, field, value))
        else:
            lines.extend(_setting(name, field, value))
    lines.extend(groups)
    lines.extend(_profiles(Settings.model_fields["profiles"]))
    return "\n".join(lines) + "\n"


def write_config_file(path: Path, *, force: bool = False) -> Path:
    """Write `default_config_text()` to `path`; an existing file is kept unless `force`."""
    if path.exists() and not force:
        raise InputError(f"config file {path} already exists; use --force to overwrite it")
    if path.exists() and not path.is_file():
        raise InputError(f"{path} is not a file")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(default_config_text(), encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot write config file {path}: {exc.strerror}") from None
    return path
