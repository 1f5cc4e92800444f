"""One validated settings object, built at entry points (never at import time).

Sources, highest first: keyword arguments, environment (``RAGPG_*``, ``DATABASE_URL``,
nested groups with ``__`` as in ``RAGPG_CHUNKING__SOFT_BYTES``), the config file
(TOML; ``RAGPG_CONFIG`` or ``<user config dir>/ragpg/config.toml``), defaults.
Unknown keys in the config file are rejected.
"""

from __future__ import annotations

import contextvars
import os
import tomllib
from pathlib import Path
from typing import Any, Literal

import platformdirs
from pydantic import AliasChoices, Field, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from rag.config_groups import (
    HOST_ENTRY_PATTERN,
    ORIGIN_PATTERN,
    ChunkingSettings,
    DbSettings,
    EmbeddingSettings,
    EvalSettings,
    IngestSettings,
    LLMSettings,
    McpSettings,
    RetrievalSettings,
    ServerSettings,
    TracingSettings,
)
from rag.config_notes import (
    ABSTAIN_BIAS,
    ABSTAIN_LOW_CONFIDENCE,
    ABSTAIN_THRESHOLD,
    ABSTAIN_WEIGHTS,
    NotesSettings,
)
from rag.config_profiles import load_profiles
from rag.errors import ConfigError

__all__ = [
    "ABSTAIN_BIAS", "ABSTAIN_LOW_CONFIDENCE", "ABSTAIN_THRESHOLD", "ABSTAIN_WEIGHTS", "APP_NAME",
    "HOST_ENTRY_PATTERN", "ORIGIN_PATTERN", "ChunkingSettings", "DbSettings", "EmbeddingSettings",
    "EvalSettings", "IngestSettings", "LLMSettings", "McpSettings", "NotesSettings", "RetrievalSettings", "ServerSettings",
    "Settings", "TracingSettings", "default_config_path", "default_data_dir", "load_settings",
]

APP_NAME = "ragpg"
LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]


class _TomlFileSource(PydanticBaseSettingsSource):
    """Reads the optional TOML config file; the model's extra='forbid' rejects unknown keys."""

    def __init__(self, settings_cls: type[BaseSettings], path: Path | None) -> None:
        super().__init__(settings_cls)
        self._data = _read_config_file(path) if path else {}

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return self._data.get(field_name), field_name, False

    def __call__(self) -> dict[str, Any]:
        return dict(self._data)


def _read_config_file(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        return {}
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {path} is not valid TOML: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror}") from None


def default_config_path() -> Path:
    explicit = os.environ.get("RAGPG_CONFIG")
    if explicit:
        return Path(explicit).expanduser()
    return Path(platformdirs.user_config_dir(APP_NAME)) / "config.toml"


def default_data_dir() -> Path:
    # As root the embedded server runs as a system user that must traverse the data dir's parents;
    # /var/lib keeps that from opening up /root.
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        return Path("/var/lib") / APP_NAME
    return Path(platformdirs.user_data_dir(APP_NAME))


class Settings(BaseSettings):
    """Every setting; the docstring under a field is its description."""

    model_config = SettingsConfigDict(
        env_prefix="RAGPG_", env_nested_delimiter="__", extra="forbid", frozen=True, use_attribute_docstrings=True
    )

    database_url: str | None = Field(
        None, validation_alias=AliasChoices("DATABASE_URL", "RAGPG_DATABASE_URL", "database_url"),
        examples=["postgresql://ragpg:secret@db.example.org:5432/ragpg"])
    """Your own PostgreSQL (with pgvector) as a libpq URL; also read from DATABASE_URL. Unset: ragpg runs
    its embedded server in data_dir. The password is masked in `ragpg config show`."""
    read_database_url: str | None = Field(
        None, examples=["postgresql://ragpg:secret@replica.example.org:5432/ragpg"])
    """A read replica (a hot standby of database_url, or a libpq multi-host URL with
    target_session_attrs=prefer-standby): searches read there, every write goes to database_url
    (docs/scaling.md). Unset: everything on database_url."""
    data_dir: Path = Field(default_factory=default_data_dir)
    """Where the embedded PostgreSQL keeps its data (in pgdata/ below it), when database_url is unset.
    Default: the user data dir (/var/lib/ragpg as root)."""
    log_level: LogLevel = "WARNING"
    """How much the `ragpg` command logs to stderr: DEBUG, INFO, WARNING, ERROR or CRITICAL (--verbose is
    INFO; `ragpg serve --log-level` sets the HTTP server's own log). As a library, ragpg leaves logging to
    the application that imports it."""
    db: DbSettings = DbSettings()
    """Connecting to the database: timeouts, the pool, console logins, a replica."""
    chunking: ChunkingSettings = ChunkingSettings()
    """How notes are cut into passages."""
    ingest: IngestSettings = IngestSettings()
    """Reading vaults and writing the index: file limits, skipped folders, write batches, bulk loads,
    `ragpg watch`."""
    embedding: EmbeddingSettings = EmbeddingSettings()
    """The model that embeds passages and questions, its batches, retries and caches."""
    retrieval: RetrievalSettings = RetrievalSettings()
    """Search inside PostgreSQL: BM25, fusion, the vector index, input limits, the query log."""
    llm: LLMSettings = LLMSettings()
    """An optional language model (any litellm model); unset: none."""
    server: ServerSettings = ServerSettings()
    """`ragpg serve`: address, authentication, admission, limits, allowed hosts and origins."""
    mcp: McpSettings = McpSettings()
    """`ragpg mcp` and `/mcp`: how much a read returns (docs/mcp.md)."""
    tracing: TracingSettings = TracingSettings()
    """Langfuse tracing (docs/langfuse.md)."""
    eval: EvalSettings = EvalSettings()
    """`ragpg eval` and `ragpg eval-beir` (eval/README.md)."""
    notes: NotesSettings = NotesSettings()
    """`ragpg ask` and `ragpg search`: passages per answer, folder priors, abstention, quoted answers."""
    profiles: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """Your own retrieval profiles, or adjustments to the built-in ones: a [profiles.NAME] table each
    (docs/configuration.md)."""

    @model_validator(mode="after")
    def _profiles_resolve(self) -> Settings:
        """Every [profiles.NAME] table is checked here, once, so a bad one stops the load, not a request."""
        load_profiles(self)
        return self

    @field_validator("log_level", mode="before")
    @classmethod
    def _level_name(cls, value: Any) -> Any:
        return value.strip().upper() if isinstance(value, str) else value

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings, env_settings, _TomlFileSource(settings_cls, _CONFIG_PATH.get()))

    @property
    def pgdata_dir(self) -> Path:
        return self.data_dir / "pgdata"


# The config file of the load_settings call under way (per thread and task, never state of the class).
_CONFIG_PATH: contextvars.ContextVar[Path | None] = contextvars.ContextVar("ragpg_config_path", default=None)


def _source(path: Path) -> str:
    return f" (config file {path})" if path.exists() else ""


def load_settings(config_path: Path | None = None, **overrides: Any) -> Settings:
    """Build the settings object; every problem becomes a one-line ConfigError."""
    path = config_path if config_path is not None else default_config_path()
    token = _CONFIG_PATH.set(path)  # read by settings_customise_sources while this call builds the settings
    try:
        return Settings(**overrides)
    except ConfigError as exc:  # a [profiles.NAME] table, checked while the settings are built
        raise ConfigError(f"{exc}{_source(path)}") from None
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err.get("loc", ())) or "settings"
        source = _source(path)
        if err.get("type") == "extra_forbidden":
            raise ConfigError(f"unknown setting '{where}'{source}") from None
        raise ConfigError(f"invalid setting '{where}': {err.get('msg')}{source}") from None
    finally:
        _CONFIG_PATH.reset(token)
