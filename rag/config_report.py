"""The effective configuration, setting by setting, with where each value came from and what it
does (`ragpg config show`; cli/config_init.py writes the commented file of `ragpg config init`).

Sources, as `rag.config` applies them (highest first): the environment (``RAGPG_*``,
``DATABASE_URL``; a group may also come whole as JSON, e.g. ``RAGPG_EMBEDDING='{"model": "hash"}'``),
the config file, the defaults. Secrets (API keys, passwords, the password inside a database URL)
are masked in everything this module returns.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from rag.config import default_config_path, load_settings
from rag.secrets import mask_url as mask_connection_password

ENV_PREFIX = "RAGPG_"
MASK = "********"
SECRET_NAME = re.compile(r"(?:^|_)(?:api_key|secret|secret_key|password|token)$")
# Top-level settings read from other environment names than RAGPG_<NAME>.
ENV_ALIASES = {"database_url": ("DATABASE_URL", "RAGPG_DATABASE_URL")}


@dataclass(frozen=True)
class SettingValue:
    name: str  # dotted: "embedding.model"
    value: Any  # masked when secret
    source: str  # "default", "config file", "env RAGPG_EMBEDDING__MODEL"
    description: str

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "value": self.value, "source": self.source, "description": self.description}


@dataclass(frozen=True)
class ConfigReport:
    config_file: Path
    config_file_exists: bool
    settings: list[SettingValue]

    def to_dict(self) -> dict[str, Any]:
        return {"config_file": str(self.config_file), "config_file_exists": self.config_file_exists,
                "settings": [s.to_dict() for s in self.settings]}


def mask_url(url: str) -> str:
    """A connection string or URL with its password replaced by the mask (rag.store.database's rule)."""
    return mask_connection_password(url, MASK)


def _masked(name: str, value: Any) -> Any:
    leaf = name.rsplit(".", 1)[-1]
    if value is not None and SECRET_NAME.search(leaf):
        return MASK
    if isinstance(value, str):  # any URL setting may carry credentials (a proxy's api_base, a tracing host)
        return mask_url(value)
    return value


def plain(value: Any) -> Any:
    """A setting's value as JSON and TOML hold it."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, tuple):
        return list(value)
    return value


def leaves(model: BaseModel, prefix: str = "") -> Iterator[tuple[str, Any, str]]:
    """(dotted name, plain value, description) of every setting below `model`, groups walked."""
    for name, field in type(model).model_fields.items():
        value = getattr(model, name)
        if isinstance(value, BaseModel):
            yield from leaves(value, f"{prefix}{name}.")
        else:
            # a docstring's line breaks are only where its source wrapped
            yield f"{prefix}{name}", plain(value), " ".join((field.description or "").split())


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
    for name, value, description in leaves(settings):
        source = _env_source(name, env) or ("config file" if _file_has(data, name) else "default")
        rows.append(SettingValue(name, _masked(name, value), source, description))
    for name, table in sorted(settings.profiles.items()):  # user profiles: config file or env only
        source = _env_source(f"profiles.{name}", env) or "config file"
        rows.append(SettingValue(f"profiles.{name}", table, source, f"Your retrieval profile '{name}'."))
    return ConfigReport(config_file=path, config_file_exists=path.exists(), settings=rows)
