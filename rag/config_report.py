"""The effective configuration, setting by setting, with where each value came from; and a
commented config file with every default (`ragpg config show` / `ragpg config init`).

Sources, as `rag.config` applies them (highest first): the environment (``RAGPG_*``,
``DATABASE_URL``; a group may also come whole as JSON, e.g. ``RAGPG_EMBEDDING='{"model": "hash"}'``),
the config file, the defaults. Secrets (API keys, passwords, the password inside a database URL)
are masked in everything this module returns.
"""

from __future__ import annotations

import json
import math
import os
import re
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from rag.config import Settings, default_config_path, load_settings
from rag.errors import InputError

ENV_PREFIX = "RAGPG_"
MASK = "********"
SECRET_NAME = re.compile(r"(?:^|_)(?:api_key|secret|secret_key|password|token)$")
URL_PASSWORD = re.compile(r"(?P<head>[a-z][a-z0-9+.-]*://[^:/@\s]+:)(?P<pw>[^@\s]+)(?P<tail>@)", re.IGNORECASE)
DSN_PASSWORD = re.compile(r"(?P<head>\bpassword\s*=\s*)(?P<pw>'[^']*'|\S+)", re.IGNORECASE)
# Top-level settings read from other environment names than RAGPG_<NAME>.
ENV_ALIASES = {"database_url": ("DATABASE_URL", "RAGPG_DATABASE_URL")}


@dataclass(frozen=True)
class SettingValue:
    name: str  # dotted: "embedding.model"
    value: Any  # masked when secret
    source: str  # "default", "config file", "env RAGPG_EMBEDDING__MODEL"

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "value": self.value, "source": self.source}


@dataclass(frozen=True)
class ConfigReport:
    config_file: Path
    config_file_exists: bool
    settings: list[SettingValue]

    def to_dict(self) -> dict[str, Any]:
        return {"config_file": str(self.config_file), "config_file_exists": self.config_file_exists,
                "settings": [s.to_dict() for s in self.settings]}


def mask_url(url: str) -> str:
    """A connection string with its password replaced by the mask."""
    url = URL_PASSWORD.sub(lambda m: m["head"] + MASK + m["tail"], url)
    return DSN_PASSWORD.sub(lambda m: m["head"] + MASK, url)


def _masked(name: str, value: Any) -> Any:
    leaf = name.rsplit(".", 1)[-1]
    if value is not None and SECRET_NAME.search(leaf):
        return MASK
    if leaf in ("database_url", "read_database_url") and isinstance(value, str):
        return mask_url(value)
    return value


def _plain(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, tuple):
        return list(value)
    return value


def _leaves(model: BaseModel, prefix: str = "") -> Iterator[tuple[str, Any]]:
    for name in type(model).model_fields:
        value = getattr(model, name)
        if isinstance(value, BaseModel):
            yield from _leaves(value, f"{prefix}{name}.")
        else:
            yield f"{prefix}{name}", _plain(value)


def _env_source(dotted: str, environ: Mapping[str, str]) -> str | None:
    upper = {k.upper(): k for k in environ}
    parts = dotted.split(".")
    if len(parts) == 1:
        names = ENV_ALIASES.get(parts[0], (ENV_PREFIX + parts[0].upper(),))
        return next((f"env {upper[n]}" for n in names if n in upper), None)
    nested = ENV_PREFIX + "__".join(p.upper() for p in parts)
    if nested in upper:
        return f"env {upper[nested]}"
    group = ENV_PREFIX + parts[0].upper()
    if group in upper:
        try:
            whole = json.loads(environ[upper[group]])
        except ValueError:
            return None
        if isinstance(whole, dict) and parts[1] in whole:
            return f"env {upper[group]}"
    return None


def _file_has(data: Mapping[str, Any], dotted: str) -> bool:
    node: Any = data
    for part in dotted.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return False
        node = node[part]
    return True


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except (OSError, tomllib.TOMLDecodeError):
        return {}  # load_settings has already reported a file it could not use


def config_report(config_path: Path | None = None, environ: Mapping[str, str] | None = None) -> ConfigReport:
    """Every setting's effective value (secrets masked) and its source."""
    path = config_path if config_path is not None else default_config_path()
    settings = load_settings(path)
    env = os.environ if environ is None else environ
    data = _read_toml(path) if path.exists() else {}
    rows = []
    for name, value in _leaves(settings):
        source = _env_source(name, env) or ("config file" if _file_has(data, name) else "default")
        rows.append(SettingValue(name, _masked(name, value), source))
    for name, table in sorted(settings.profiles.items()):  # user profiles: config file or env only
        source = _env_source(f"profiles.{name}", env) or "config file"
        rows.append(SettingValue(f"profiles.{name}", table, source))
    return ConfigReport(config_file=path, config_file_exists=path.exists(), settings=rows)


# -- config init ---------------------------------------------------------------------------------

INIT_HEADER = """\
# ragpg configuration (TOML). Every line below is a setting at its default, commented out:
# remove the leading '# ' and change the value to set one.
# Precedence, highest first: environment (RAGPG_<GROUP>__<NAME>, e.g. RAGPG_EMBEDDING__MODEL=hash;
# DATABASE_URL), this file, the defaults. `ragpg config show` prints the values in force and
# where each came from.
"""
PROFILES_EXAMPLE = """\
# Your own retrieval profiles (rag/profiles.py lists the keys), e.g. notes that favour recent meeting
# notes (frontmatter `type: meeting`, `date: 2024-05-01`):
# [profiles.my_notes]
# base = "notes"
# type_weights = { meeting = 1.2, daily = 0.9 }
# w_freshness = 0.15
# freshness_half_life_days = 180.0
"""


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)) and not (isinstance(value, float) and not math.isfinite(value)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{ " + ", ".join(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in value.items()) + " }" if value else "{}"
    return json.dumps(str(value))


def _toml_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else json.dumps(key)


def default_config_text() -> str:
    """A config file listing every setting at its default, commented out (valid TOML as it stands,
    and still valid with any line uncommented)."""
    defaults = Settings.model_construct()  # no sources read
    lines = [INIT_HEADER]
    top: list[tuple[str, Any]] = []
    groups: list[tuple[str, Any]] = []
    for name, field in Settings.model_fields.items():
        if name == "profiles":
            continue
        value = getattr(defaults, name, None)
        if value is None and field.default_factory is not None:
            value = field.default_factory()  # type: ignore[call-arg]  # pydantic's factories here take no argument
        (groups if isinstance(value, BaseModel) else top).append((name, value))
    for name, value in top:
        if name == "data_dir":
            lines.append("# The embedded server's data (default: the user data dir).")
        lines.append(_commented(name, _plain(value)))
    for group, model in groups:
        lines.append(f"\n[{group}]")
        for name in type(model).model_fields:
            lines.append(_commented(name, _plain(getattr(model, name))))
    lines.append("")
    lines.append(PROFILES_EXAMPLE)
    return "\n".join(lines)


def _commented(name: str, value: Any) -> str:
    if value is None:
        return f"# {name} = \"\"  # unset by default"
    return f"# {name} = {_toml_value(value)}"


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
