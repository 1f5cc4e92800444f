"""One validated settings object, built at entry points (never at import time).

Sources, highest first: keyword arguments, environment (``RAGPG_*``, ``DATABASE_URL``,
nested groups with ``__`` as in ``RAGPG_CHUNKING__SOFT_BYTES``), the config file
(TOML; ``RAGPG_CONFIG`` or ``<user config dir>/ragpg/config.toml``), defaults.
Unknown keys in the config file are rejected.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Annotated, Any, Literal

import platformdirs
from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from rag.errors import ConfigError

APP_NAME = "ragpg"


class _Group(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ChunkingSettings(_Group):
    soft_bytes: int = Field(4096, gt=0)
    hard_bytes: int = Field(8192, gt=0)
    overlap_bytes: int = Field(0, ge=0)
    max_chunks_per_document: int = Field(2000, gt=0)


class IngestSettings(_Group):
    max_document_bytes: int = Field(10 * 1024 * 1024, gt=0)
    skip_hidden_folders: tuple[str, ...] = (".obsidian", ".git", ".trash")
    upsert_batch_documents: int = Field(32, gt=0)
    # A flush bulk-loads (drops the model's HNSW index, COPYs, rebuilds it, in its transaction) when it
    # adds at least `bulk_load_min_vectors` vectors and at least this fraction of the rows already in
    # the table. Measured on the Obsidian help vault (384 dims): an HNSW insert costs ~1.4 ms a vector,
    # a rebuild ~0.36 ms per row, so rebuilding pays while new >= ~0.35 x existing.
    bulk_load_min_fraction: float = Field(0.35, gt=0)
    bulk_load_min_vectors: int = Field(256, ge=1)
    # Bulk loads of precomputed rows (rag/ingest/bulk.py): chunks per COPY batch, each its own
    # transaction, so neither side holds more than a batch in memory.
    bulk_batch_rows: int = Field(5000, gt=0)
    # Index builds after a bulk load: maintenance_work_mem (and work_mem for the BM25 pass) sized to
    # what the HNSW graph needs, at most this share of the machine's available memory and this many
    # MiB; only when the server runs on this machine (elsewhere the server's own settings stay).
    build_memory_fraction: float = Field(0.25, gt=0, le=1)
    build_memory_max_mb: int = Field(8192, ge=64)
    # Parallel workers per index build (besides the leader); None: one per core beyond the first
    # when the server is local, the server's max_parallel_maintenance_workers otherwise.
    build_parallel_workers: int | None = Field(None, ge=0)
    watch_debounce_ms: int = Field(500, ge=0)


class EmbeddingSettings(_Group):
    # "local", "hash" (optionally "hash:<dims>"), or a litellm model such as "openai/text-embedding-3-small".
    model: str = "local"
    batch_size: int = Field(64, gt=0)
    hash_dims: int = Field(384, gt=0)
    max_retries: int = Field(3, ge=0)
    retry_backoff_s: float = Field(0.5, ge=0)
    timeout_s: float = Field(30.0, gt=0)
    query_cache_size: int = Field(1024, ge=0)
    # Sentences `ask` weighs for a quoted answer, kept per process (Embedder.embed_sentences): a
    # repeated passage costs nothing the second time. 8192 rows of 384 float32 dims are 12 MiB.
    sentence_cache_size: int = Field(8192, ge=0)
    # Local model: a batch holds at most this many tokens (texts × longest text, padding included).
    # Attention memory grows with batch × length², and onnxruntime keeps its peak: 64 × 256 tokens
    # held ~2.8 GB while indexing; 2048 keeps an index run under 1 GiB at about the same speed.
    max_batch_tokens: int = Field(2048, gt=0)


class RetrievalSettings(_Group):
    bm25_k1: float = Field(0.9, gt=0)
    bm25_b: float = Field(0.4, ge=0, le=1)
    # Where the lexical leg runs, chosen per vault at index time (rag.store.lexical_backend): auto = a
    # pg_textsearch bm25 index when the server has it loaded, else the SQL BM25; sql; pg_textsearch.
    lexical_backend: Literal["auto", "sql", "pg_textsearch"] = "auto"
    rrf_k: int = Field(60, gt=0)
    # A filtered vector search scans the matching rows exactly when there are at most this many
    # (~4 µs a row at 384 dims); broader filters use HNSW with iterative scans, ef_search raised
    # by the share of rows the filter keeps (db/sql/40_model_functions.sql). 100k chunks, a 10%
    # filter (~9.9k rows), hash vectors: exact 39-47 ms at recall 1.0; HNSW at the ef_search that
    # takes (1000) 45-53 ms at recall 0.88-0.90. (Before ef_search followed the filter, the index path
    # at ef 100 was cheaper, and 2000 was the better bound.)
    exact_scan_max_rows: int = Field(10000, ge=0)
    # The floor: a search of a large index runs deeper (ragpg_hnsw_ef_search: 800 per million rows).
    hnsw_ef_search: int = Field(100, gt=0)
    max_match_count: int = Field(1000, gt=0)
    max_query_chars: int = Field(20000, gt=0)
    # Record each question's embedding and the notes among its first `query_log_top` candidates, for
    # the SQL console (search_hybrid('question') in psql, ragpg_most_retrieved_notes).
    query_log: bool = True
    query_log_top: int = Field(10, ge=0)
    # The log is written by a background thread (rag/store/query_log.py), never on the request path:
    # at most this many records wait (more are dropped, with a warning) ...
    query_log_queue_size: int = Field(10000, gt=0)
    # ... each write sends up to this many in one statement, after waiting at most this long for them
    # (one statement per batch rather than per question; a full batch goes at once) ...
    query_log_batch_size: int = Field(100, gt=0)
    query_log_linger_ms: float = Field(100.0, ge=0)
    # ... and closing the runtime (or the process exiting) waits at most this long for the rest.
    query_log_flush_s: float = Field(5.0, gt=0)


class LLMSettings(_Group):
    model: str | None = None
    api_base: str | None = None
    api_key: str | None = None
    timeout_s: float = Field(20.0, gt=0)
    max_retries: int = Field(0, ge=0)
    temperature: float = Field(0.0, ge=0, le=2)


class DbSettings(_Group):
    # An unreachable database is reported within about this long (one line, exit 3), not after retries.
    connect_timeout_s: float = Field(2.0, gt=0)
    # How long a request waits for a pooled connection before it fails (503 + Retry-After). The pool
    # holds at least server.concurrency connections, so only an outage makes a request wait this long.
    pool_wait_s: float = Field(1.0, gt=0)
    # During an outage requests fail at once; at most one probe connection per this interval checks
    # whether the database is back, and a successful probe replaces the pool (no reconnect backoff).
    outage_probe_interval_s: float = Field(1.0, gt=0)
    # A `ragpg db console` login (a role bound by clearance and vaults) stops working after this long.
    console_login_valid_h: float = Field(12.0, gt=0)
    # With a read replica: an index run (`ragpg index`, POST /v1/index) ends by waiting up to this long
    # for the replica to replay everything it wrote, so reads right after it see the run; past it, the
    # run still succeeds, with a warning that searches may not see it yet. 0 = never wait.
    replica_wait_s: float = Field(30.0, ge=0)
    # How often that wait asks the replica how far it has replayed.
    replica_poll_ms: float = Field(50.0, gt=0)


# server.allowed_hosts: a host name (letters, digits, '-', '_', dots) or a bracketed IPv6 address,
# with an optional port. server.allowed_origins: http(s)://host[:port], nothing after it.
_HOST = r"(?:[A-Za-z0-9_](?:[A-Za-z0-9_-]*[A-Za-z0-9_])?(?:\.[A-Za-z0-9_](?:[A-Za-z0-9_-]*[A-Za-z0-9_])?)*|\[[0-9A-Fa-f:.]+\])"
HOST_ENTRY_PATTERN = rf"^{_HOST}(?::[0-9]{{1,5}})?$"
ORIGIN_PATTERN = rf"^https?://{_HOST}(?::[0-9]{{1,5}})?$"


class ServerSettings(_Group):
    # "auto": keyless on loopback only until the first API key is created, keys required from then on
    # (revoking every key never turns authentication off); "keys": always; "keyless": loopback
    # callers without a key get full access even when keys exist (an explicit choice).
    auth: Literal["auto", "keys", "keyless"] = "auto"
    host: str = "127.0.0.1"
    port: int = Field(8000, gt=0, lt=65536)
    concurrency: int = Field(8, gt=0)
    queue_size: int = Field(64, ge=0)
    retry_after_s: int = Field(1, ge=0)
    max_body_bytes: int = Field(1024 * 1024, gt=0)
    # An API key's last_used_at moves at most this often: checking a key is then a read, not a write
    # and a commit on every request (requests sharing a key would queue on its row). 0 = every request.
    key_touch_interval_s: float = Field(60.0, ge=0)
    # A key to create at start when it does not exist yet (env RAGPG_SERVER__API_KEY; docker-compose
    # passes RAGPG_API_KEY): full access to every vault, so a server on 0.0.0.0 never starts keyless.
    api_key: str | None = None
    # Host names a request may carry (the Host header), besides the loopback names 127.0.0.1,
    # localhost and [::1] with the bound port (and the bound address itself, when it is not 0.0.0.0
    # or ::): the names clients use through a proxy or between docker-compose services. "name"
    # matches any port, "name:port" that port only. Any other Host is refused with 421 before any
    # handler or key check runs: a web page that rebinds its own domain to 127.0.0.1 (DNS rebinding)
    # cannot reach the API under that domain. Env: RAGPG_SERVER__ALLOWED_HOSTS='["ragpg.example.org"]'.
    allowed_hosts: tuple[Annotated[str, Field(pattern=HOST_ENTRY_PATTERN)], ...] = ()
    # Web origins ("https://app.example.org") whose pages may call the API from a browser; they alone
    # get CORS headers. A request whose Origin is neither the server's own nor listed is refused (403).
    allowed_origins: tuple[Annotated[str, Field(pattern=ORIGIN_PATTERN)], ...] = ()
    # A client must send a request's whole header block within this long of connecting (or of the
    # previous response on a kept-alive connection), and its whole body within body_timeout_s of the
    # headers; a slower one is cut off (408), so trickling bytes cannot hold connections open.
    header_timeout_s: float = Field(10.0, gt=0)
    body_timeout_s: float = Field(30.0, gt=0)


class McpSettings(_Group):
    """`ragpg mcp` and `/mcp` (docs/mcp.md)."""

    # read_note, and a note read as an MCP resource, return at most this many characters of the
    # note's stored passages per call (whole passages, at least one); the result says where to go on.
    read_max_chars: int = Field(20000, gt=0, description="Most characters of a note one read_note call or "
                                "resource read returns (whole passages, at least one); the rest by start_line.")
    # resources/list pages through the notes a caller may read this many at a time.
    resources_page_size: int = Field(200, gt=0, description="Notes per page of an MCP resources/list.")


class TracingSettings(_Group):
    langfuse_public_key: str | None = None
    langfuse_secret_key: str | None = None
    langfuse_host: str | None = None


class EvalSettings(_Group):
    # `ragpg eval --baseline`: a metric more than this below its baseline value is a degradation (exit 3).
    tolerance: float = Field(0.02, ge=0)
    # `ragpg eval-beir`: documents retrieved per query (recall@depth; nDCG@10 and MRR@10 use the top 10).
    beir_depth: int = Field(100, gt=0, le=1000)


# Fitted on the golden set's dev split only (`python eval/fit_abstention.py eval/golden/obsidian-help.yaml
# --cv --portable --max-wrong 0.05`, local model): of the signals that do not depend on the embedder's
# cosine scale (rag.notes.abstain.PORTABLE_SIGNALS), the subset of up to three that scored best in 5-fold
# cross-validation on dev, and the threshold that abstains most while wrongly abstaining on at most 5 % of
# dev's answerable questions; signals left out weigh 0. Refit after changing retrieval, ranking or signals.
# Without --portable the CV picks margin, sentence_similarity and names_missing (golden test split: abstains
# on 0.15 of the unanswerable, wrongly on 0.021 of the answerable, vs 0.25 / 0.093 here), but those weights
# hold for MiniLM's cosines only: with the hash embedder the same model wrongly abstained on 0.165.
ABSTAIN_WEIGHTS: dict[str, float] = {"term_coverage": 2.575, "unknown_share": -4.444, "passage_coverage": -2.681}
ABSTAIN_BIAS = 2.011
ABSTAIN_THRESHOLD = 0.69
ABSTAIN_LOW_CONFIDENCE = 0.8


class NotesSettings(_Group):
    """Tunables of the notes-vault answering workflow (`rag.ask`, `rag.notes`)."""

    # The notes workflow runs the shared pipeline (rag.retrieval.stage → rag.retrieval.rank) with this profile.
    profile: str = "notes"
    # Folder prior: the folder at position i of the selection (user, LLM or centroid order) weighs
    # w_i = max(1.0 - i * step, min); a candidate's final score is multiplied by
    # (1 - folder_prior_weight) + folder_prior_weight * w_i. Every folder is searched either way.
    folder_prior_weight: float = Field(0.0, ge=0, le=1)
    # Same, when an LLM ranked the folders (it reads folder names, which centroids do not).
    folder_prior_weight_llm: float = Field(0.3, ge=0, le=1)
    # Folder position weights: 1.0, 1.0 - step, ... never below folder_weight_min.
    folder_weight_step: float = Field(0.1, ge=0)
    folder_weight_min: float = Field(0.1, ge=0, le=1)
    # K: the number of notes passages an answer draws on.
    k_min: int = Field(3, gt=0)
    k_max: int = Field(8, gt=0)
    k_brief: int = Field(3, gt=0)
    k_normal: int = Field(5, gt=0)
    k_detailed: int = Field(8, gt=0)
    breadth_bonus: int = Field(2, ge=0)
    breadth_min_words: int = Field(20, gt=0)  # a question longer than this many words is broad
    breadth_min_question_marks: int = Field(2, gt=0)
    breadth_words: tuple[str, ...] = ("overview", "everything", "all", "compare", "comparison", "summarize",
                                      "summary")
    folder_filter_k_delta: int = -1  # the user named folders: a narrower question
    # Abstention (rag.notes.abstain): p(answerable) = logistic(bias + sum weight * signal); abstain
    # below the threshold; "low" confidence below abstain_low_confidence. Fitted on the golden
    # set's dev split by `python eval/fit_abstention.py`.
    abstain_weights: dict[str, float] = Field(default_factory=lambda: dict(ABSTAIN_WEIGHTS))
    abstain_bias: float = ABSTAIN_BIAS
    abstain_threshold: float = Field(ABSTAIN_THRESHOLD, ge=0, le=1)
    abstain_low_confidence: float = Field(ABSTAIN_LOW_CONFIDENCE, ge=0, le=1)
    abstain_top_passages: int = Field(3, gt=0)
    # Answers.
    answer_max_tokens: int = Field(800, gt=0)
    folder_rank_max_tokens: int = Field(300, gt=0)
    # Sentences quoted without an LLM, and sources listed, per detail hint.
    answer_sentences: dict[str, int] = Field(default_factory=lambda: {"brief": 1, "normal": 2, "detailed": 3})
    answer_sources: dict[str, int] = Field(default_factory=lambda: {"brief": 1, "normal": 3, "detailed": 8})
    # A sentence's score: (1 - w) * weighted share of question terms + w * embedding similarity to the question.
    extractive_semantic_weight: float = Field(0.5, ge=0, le=1)
    extractive_min_share_of_best: float = Field(0.5, ge=0, le=1)  # quote sentences scoring >= this x the best
    # embed each answer sentence after its note's title and section ("Obsidian Headless Install: ...");
    # golden set, local model, no LLM: answer_fact dev 0.432 -> 0.463 (tuned on), test 0.371 -> 0.392;
    # it costs 36-39 ms of a ~290 ms ask p50 (bench/ask_latency.py --compare-sentence-context)
    extractive_sentence_context: bool = True
    # a quoted sentence under this many words brings the next sentence of its passage (0: never);
    # 12 on the golden dev split (with FAQ prompts answered by what follows them, numbered steps kept with
    # their introduction and table rows read as sentences, a sentence saying "This ..." after the one before it):
    # answer_fact 0.379 -> 0.432
    extractive_short_sentence_words: int = Field(12, ge=0)
    snippet_chars: int = Field(280, gt=20)
    search_k_max: int = Field(100, gt=0)
    search_min_score: float = 0.0  # search lists only passages scoring above this (no floors otherwise)

    @model_validator(mode="after")
    def _consistent(self) -> NotesSettings:
        if self.k_min > self.k_max:
            raise ValueError(f"k_min ({self.k_min}) must not exceed k_max ({self.k_max})")
        if self.abstain_low_confidence < self.abstain_threshold:
            raise ValueError("abstain_low_confidence must not be below abstain_threshold")
        for name, table in (("answer_sentences", self.answer_sentences), ("answer_sources", self.answer_sources)):
            if set(table) != {"brief", "normal", "detailed"} or min(table.values()) < 1:
                raise ValueError(f"{name} needs brief, normal and detailed, each at least 1")
        return self


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
    model_config = SettingsConfigDict(
        env_prefix="RAGPG_", env_nested_delimiter="__", extra="forbid", frozen=True
    )

    database_url: str | None = Field(
        None, validation_alias=AliasChoices("DATABASE_URL", "RAGPG_DATABASE_URL", "database_url")
    )
    # A read replica (a hot standby of DATABASE_URL, or a libpq multi-host URL with
    # target_session_attrs=prefer-standby): retrieval reads go here, every write to DATABASE_URL
    # (docs/scaling.md). Unset: everything on DATABASE_URL.
    read_database_url: str | None = None
    data_dir: Path = Field(default_factory=default_data_dir)
    log_level: str = "WARNING"
    db: DbSettings = DbSettings()
    chunking: ChunkingSettings = ChunkingSettings()
    ingest: IngestSettings = IngestSettings()
    embedding: EmbeddingSettings = EmbeddingSettings()
    retrieval: RetrievalSettings = RetrievalSettings()
    llm: LLMSettings = LLMSettings()
    server: ServerSettings = ServerSettings()
    mcp: McpSettings = McpSettings()
    tracing: TracingSettings = TracingSettings()
    eval: EvalSettings = EvalSettings()
    notes: NotesSettings = NotesSettings()
    profiles: dict[str, dict[str, Any]] = Field(default_factory=dict)

    _config_path: Path | None = None

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings, env_settings, _TomlFileSource(settings_cls, cls._config_path))

    @property
    def pgdata_dir(self) -> Path:
        return self.data_dir / "pgdata"


def load_settings(config_path: Path | None = None, **overrides: Any) -> Settings:
    """Build the settings object; every problem becomes a one-line ConfigError."""
    path = config_path if config_path is not None else default_config_path()
    Settings._config_path = path
    try:
        return Settings(**overrides)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err.get("loc", ())) or "settings"
        source = f" (config file {path})" if path.exists() else ""
        if err.get("type") == "extra_forbidden":
            raise ConfigError(f"unknown setting '{where}'{source}") from None
        raise ConfigError(f"invalid setting '{where}': {err.get('msg')}{source}") from None
    finally:
        Settings._config_path = None
