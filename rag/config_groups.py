"""The settings groups of indexing, retrieval and the services (`[chunking]`, `[ingest]`, `[embedding]`,
`[retrieval]`, `[llm]`, `[db]`, `[server]`, `[tracing]`, `[eval]`); `rag.config` assembles them into
`Settings`, and `rag.config_notes` holds the `[notes]` group.

Every field has a description written for the person editing the config file (what it does, its
unit, when to change it), the docstring under it: `ragpg config show` and `ragpg config init` print
it. A field's type carries its bounds (`PositiveInt`, `ZeroToOne`, ...). Comments keep the
measurements behind a default.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    NonNegativeFloat,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
)

from rag.access import Level

#: A share, fraction or weight between 0 and 1.
ZeroToOne = Annotated[float, Field(ge=0, le=1)]


class Group(BaseModel):
    """A `[group]` table of the config file: unknown keys are an error, values never change after
    loading, and the docstring under a field is its description."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


class ChunkingSettings(Group):
    soft_bytes: PositiveInt = 4096
    """Target passage size, in bytes of UTF-8 text: blocks of one section (paragraphs, lists, code) are
    packed into a passage up to this size. Smaller passages match more precisely and carry less context
    each. A change applies to files indexed after it: an unchanged file keeps its passages (remove and add
    the vault again to cut everything anew)."""
    hard_bytes: PositiveInt = 8192
    """No passage is longer than this many bytes: a longer block is split at line ends (a single long line
    at character boundaries). At least 4."""
    overlap_bytes: NonNegativeInt = 0
    """Bytes a passage repeats from the end of the one before it in the same section (whole lines), so a
    sentence cut at a boundary is whole in one of them. 0: passages do not overlap."""
    max_chunks_per_document: PositiveInt = 2000
    """At most this many passages per file: the rest of a longer file is not indexed, and the index report
    says so. Raise it for very long documents."""


class IngestSettings(Group):
    max_document_bytes: PositiveInt = 10 * 1024 * 1024
    """Files larger than this (bytes; default 10 MiB) are skipped, with a warning in the index report."""
    max_pdf_bytes: PositiveInt = 50 * 1024 * 1024
    """PDF files larger than this (bytes; default 50 MiB) are skipped, with the reason in the index report.
    PDFs are read only with the optional extra ragpg[pdf]."""
    max_gone_share: ZeroToOne = 0.5
    """Most of a vault's indexed files (a share, 0 to 1) one run may find gone before it refuses to remove
    them, as an unmounted or replaced folder (say, one holding only a README) looks: nothing is removed
    unless `--allow-empty` confirms. 1: only an empty folder is refused."""
    pdf_confidentiality: Level = "restricted"
    """The level a PDF is stored at: it has no front matter to say one, so the most restricted level keeps
    a restricted note's attachment from every key and console role below it. Set it lower for a vault
    whose PDFs every reader may see; the next index run stores every PDF at the new level."""
    max_pdf_pages: PositiveInt = 1000
    """PDF files with more pages than this are skipped, with the reason in the index report (each page is a
    section of its own; a passage cites its page)."""
    max_canvas_nodes: PositiveInt = 5000
    """At most this many nodes of a .canvas file are indexed (cards, groups; in the file's order): the rest
    are not, and the index report says so."""
    skip_hidden_folders: tuple[str, ...] = (".obsidian", ".git", ".trash")
    """Folder names never indexed or watched, wherever they appear in a vault."""
    link_sentence_max_chars: PositiveInt = 500
    """The line around a link (its paragraph, list item or table row), kept in the link graph as the words
    other notes use for the note it names, is cut to this many characters (around the link)."""
    note_outline_max_headings: PositiveInt = 30
    """A note's outline vector (its name and headings, a ranking signal of `ask` and `search`) holds at most
    this many of its headings."""
    note_inbound_max_sentences: PositiveInt = 20
    """A note's inbound vector (the sentences other notes link to it with) holds at most this many."""
    upsert_batch_documents: PositiveInt = 32
    """Documents written to the database per transaction while indexing (fewer when their passages reach
    chunking.max_chunks_per_document). Larger batches embed and write in bigger steps and hold more in
    memory."""
    # Measured on the Obsidian help vault (384 dims): an HNSW insert costs ~1.4 ms a vector, a rebuild
    # ~0.36 ms per row, so rebuilding pays while new >= ~0.35 x existing.
    bulk_load_min_fraction: PositiveFloat = 0.35
    """A write of new vectors is a bulk load (the vector index dropped, the rows copied, the index rebuilt,
    in one transaction) when it adds at least this fraction of the rows already in the model's table (a
    bulk load of one vault: in that vault's partition of it), and at least ingest.bulk_load_min_vectors
    vectors. Smaller fractions rebuild more often."""
    bulk_load_min_vectors: int = Field(256, ge=1)
    """The fewest new vectors a write must add to be a bulk load (see ingest.bulk_load_min_fraction)."""
    own_partition_min_chunks: NonNegativeInt = 10000
    """A vault gets partitions of its own (its own HNSW graph, postings and bm25 index reads) once an
    index run would leave it with more chunks than this; smaller vaults share one default partition, so
    a search naming no vault visits a bounded number of graphs however many vaults there are
    (docs/scaling.md, "Partitions by vault"). The default is retrieval.exact_scan_max_rows' default: a
    small vault's search scans its rows exactly. A vault that has moved never moves back."""
    bulk_batch_rows: PositiveInt = 5000
    """Passages per COPY batch when loading a BEIR corpus or precomputed vectors, each batch its own
    transaction, so no side holds more than one batch in memory."""
    build_memory_fraction: float = Field(0.25, gt=0, le=1)
    """After a bulk load, index builds get the memory the vector graph needs (maintenance_work_mem), at
    most this share of the machine's available memory; only when the database runs on this machine
    (otherwise the server's own settings apply)."""
    build_memory_max_mb: int = Field(8192, ge=64)
    """The most memory (MiB) an index build after a bulk load is given, whatever the share allows."""
    build_parallel_workers: NonNegativeInt | None = Field(None, examples=[2])
    """Parallel workers per index build besides the leader. Unset: one per core beyond the first when the
    database runs on this machine, else the server's max_parallel_maintenance_workers."""
    watch_debounce_ms: NonNegativeInt = 500
    """`ragpg watch` waits for this many milliseconds without a change before it re-indexes, so a burst of
    saves is one run."""


class EmbeddingSettings(Group):
    model: str = "local"
    """The model that turns passages and questions into vectors: "local" (all-MiniLM-L6-v2, shipped,
    offline), "hash" or "hash:<dims>" (a fast, meaningless baseline for tests), or a litellm model such as
    "openai/text-embedding-3-small". After a change the next `ragpg index` embeds every passage again into
    that model's own table; index before you search."""
    batch_size: PositiveInt = 64
    """Texts sent to the embedding model per call while indexing."""
    hash_dims: PositiveInt = 384
    """Dimensions of the "hash" model's vectors."""
    max_retries: NonNegativeInt = 3
    """Retries of a failed call to a litellm embedding provider before indexing or the search fails (exit
    5)."""
    retry_backoff_s: NonNegativeFloat = 0.5
    """Seconds before the first retry of a failed embedding call; each next retry waits twice as long."""
    timeout_s: PositiveFloat = 30.0
    """Seconds a litellm embedding call may take."""
    query_cache_size: NonNegativeInt = 1024
    """Question embeddings kept per process, so a repeated question is not embedded again. 0: none."""
    # 8192 rows of 384 float32 dims are 12 MiB.
    sentence_cache_size: NonNegativeInt = 8192
    """Sentence embeddings kept per process for quoted answers (`ask` without an LLM weighs the sentences
    of the best passages): a passage seen before costs nothing. 0: none."""
    # Attention memory grows with batch × length², and onnxruntime keeps its peak: 64 × 256 tokens held
    # ~2.8 GB while indexing; 2048 keeps an index run under 1 GiB at about the same speed.
    max_batch_tokens: PositiveInt = 2048
    """The local model embeds at most this many tokens per batch (texts × the longest text). Lower it if
    indexing uses too much memory; raising it gains little speed."""


class RetrievalSettings(Group):
    bm25_k1: PositiveFloat = 0.9
    """BM25 term-frequency saturation: how much a word repeated in a passage adds. Higher values reward
    repetition more; 0.9 is the common default for short passages."""
    bm25_b: ZeroToOne = 0.4
    """BM25 length normalisation, 0 to 1: how much a long passage is discounted against short ones."""
    lexical_backend: Literal["auto", "sql", "pg_textsearch"] = "auto"
    """Where word (BM25) search runs, chosen per vault at index time: "pg_textsearch" (a bm25 index, needs
    the `bm25` extra and a server that loads it), "sql" (BM25 in plain SQL, always available), or "auto"
    (pg_textsearch when the server has it, else sql)."""
    rrf_k: PositiveInt = 60
    """The k of reciprocal rank fusion, which merges the vector and word result lists in hybrid search: a
    result at rank r counts 1/(k + r). Larger values flatten the difference between ranks."""
    # 100k chunks, a 10% filter (~9.9k rows), hash vectors: exact 39-47 ms at recall 1.0; HNSW at the
    # ef_search that takes (1000) 45-53 ms at recall 0.88-0.90.
    exact_scan_max_rows: NonNegativeInt = 10000
    """A filtered vector search compares every matching passage exactly (about 4 µs a row at 384
    dimensions) when the filter keeps at most this many rows, or twice as many when they are at most 15%
    of the passages searched (the index would be searched near its deepest there); broader filters use the
    HNSW index, searching deeper the fewer rows the filter keeps. 0: always the index."""
    hnsw_ef_search: PositiveInt = 100
    """The least depth of an HNSW vector search (hnsw.ef_search): higher finds more of the true nearest
    passages and costs time. Large indexes search deeper on their own (800 per million rows)."""
    max_match_count: PositiveInt = 1000
    """The most results one search may ask for (match_count, k)."""
    max_query_chars: PositiveInt = 20000
    """The longest question or query accepted, in characters; a longer one is refused as bad input."""
    query_log: bool = True
    """Record each question's embedding and the notes among its first retrieval.query_log_top results, for
    the SQL console (`search_hybrid('question')`, ragpg_most_retrieved_notes). false: record nothing."""
    query_log_top: NonNegativeInt = 10
    """How many of a question's first results the query log records."""
    # The log is written by a background thread (rag/store/query_log.py), never on the request path.
    query_log_queue_size: PositiveInt = 10000
    """Query-log records that may wait to be written; more are dropped, with a warning."""
    query_log_batch_size: PositiveInt = 100
    """Query-log records written per statement (a full batch is written at once)."""
    query_log_linger_ms: NonNegativeFloat = 100.0
    """Milliseconds the query-log writer waits for more records before it writes a batch that is not full."""
    query_log_flush_s: PositiveFloat = 5.0
    """Seconds a closing process waits to write the query-log records still queued."""


class LLMSettings(Group):
    model: str | None = Field(None, examples=["ollama/llama3", "openai/gpt-4o-mini"])
    """A litellm model name for answers, folder ranking and Auto-RAG corrections. Unset: no LLM (answers
    quote your notes). With a provider's key in its usual variable, e.g. OPENAI_API_KEY."""
    api_base: str | None = Field(None, examples=["http://localhost:11434"])
    """The provider's URL, when not its default (e.g. an Ollama on another host)."""
    api_key: str | None = None
    """The provider's API key, when it is not in the provider's usual environment variable. Masked in
    `ragpg config show`."""
    timeout_s: PositiveFloat = 20.0
    """Seconds the provider may stay silent during one LLM call (its read timeout); a slower or failed call is
    never an error: the answer quotes the notes and retrieval keeps its first pass."""
    deadline_s: PositiveFloat = 20.0
    """Seconds of wall clock for all the LLM work of one request (`ask`, `compute_context`: folder ranking,
    corrections, the answer), however the provider sends its reply; past it every LLM step falls back (a
    quoted answer, the first retrieval pass) and the decision record says "llm deadline"."""
    max_retries: NonNegativeInt = 0
    """Retries of a failed LLM call."""
    temperature: float = Field(0.0, ge=0, le=2)
    """Sampling temperature of LLM calls, 0 to 2; 0 gives the most repeatable answers."""


class DbSettings(Group):
    connect_timeout_s: PositiveFloat = 2.0
    """Seconds to wait for the database before reporting it unreachable (one line, exit 3)."""
    pool_wait_s: PositiveFloat = 1.0
    """Seconds a server request waits for a pooled connection before it fails (503 with Retry-After). The
    pool holds at least server.concurrency connections, so only an outage makes a request wait."""
    outage_probe_interval_s: PositiveFloat = 1.0
    """During a database outage the server fails requests at once and checks at most this often (seconds)
    whether the database is back; service resumes within about this long of its return."""
    console_login_valid_h: PositiveFloat = 12.0
    """Hours a `ragpg db console` login (a role bound by clearance and vaults) keeps working."""
    console_statement_timeout_s: PositiveFloat = 60.0
    """Seconds one statement of a console login may run (its role's statement_timeout). A default the
    login may change in its own session (docs/security.md): the hard limits are the next two."""
    console_temp_file_limit_mb: PositiveInt = 1024
    """Megabytes of temporary files (sorts, hashes) one session of a console login may write (its role's
    temp_file_limit, which only a superuser may change). Setting it needs a superuser or `grant set on
    parameter temp_file_limit` to the owner; without either, `ragpg db console` refuses."""
    console_work_mem_mb: PositiveInt = 16
    """Megabytes a console login's sort or hash may use in memory before spilling to temporary files."""
    console_connection_limit: PositiveInt = 4
    """Sessions a console login may hold at once (its role's connection limit)."""
    replica_wait_s: NonNegativeFloat = 30.0
    """With a read replica: an index run waits up to this many seconds for the replica to replay what it
    wrote, so searches right after it see the run; past it the run still succeeds, with a warning. 0: never
    wait."""
    replica_poll_ms: PositiveFloat = 50.0
    """Milliseconds between checks of how far the replica has replayed, during that wait."""


class McpSettings(Group):
    """`ragpg mcp` and `/mcp` (docs/mcp.md)."""

    read_max_chars: PositiveInt = 20000
    """Most characters of a note one read_note call or MCP resource read returns (whole passages, at least
    one); the result says where to go on (start_line)."""
    resources_page_size: PositiveInt = 200
    """Notes per page of an MCP resources/list."""


class TracingSettings(Group):
    langfuse_public_key: str | None = None
    """Langfuse public key: with the secret key set, every request is a trace (needs the `langfuse` extra).
    Unset: no tracing."""
    langfuse_secret_key: str | None = None
    """Langfuse secret key (masked in `ragpg config show`)."""
    langfuse_host: str | None = Field(None, examples=["http://localhost:3000"])
    """The Langfuse server's URL. Unset: Langfuse's own default (its cloud)."""


class EvalSettings(Group):
    tolerance: NonNegativeFloat = 0.02
    """`ragpg eval --baseline`: a metric more than this below its baseline value counts as a degradation
    (exit 3)."""
    beir_depth: int = Field(100, gt=0, le=1000)
    """`ragpg eval-beir`: documents retrieved per query (recall@depth; nDCG@10 and MRR@10 use the top 10)."""


# server.allowed_hosts: a host name (letters, digits, '-', '_', dots) or a bracketed IPv6 address,
# with an optional port. server.allowed_origins: http(s)://host[:port], nothing after it.
_HOST = r"(?:[A-Za-z0-9_](?:[A-Za-z0-9_-]*[A-Za-z0-9_])?(?:\.[A-Za-z0-9_](?:[A-Za-z0-9_-]*[A-Za-z0-9_])?)*|\[[0-9A-Fa-f:.]+\])"
HOST_ENTRY_PATTERN = rf"^{_HOST}(?::[0-9]{{1,5}})?$"
ORIGIN_PATTERN = rf"^https?://{_HOST}(?::[0-9]{{1,5}})?$"


class ServerSettings(Group):
    auth: Literal["auto", "keys", "keyless"] = "auto"
    """Who needs an API key: "auto" serves loopback callers without a key only until the first key is ever
    created (revoking every key never turns authentication off), "keys" always requires one, "keyless" lets
    loopback callers without a key in even when keys exist."""
    host: str = "127.0.0.1"
    """The interface `ragpg serve` binds (--host overrides it). A server on 0.0.0.0 needs an API key."""
    port: int = Field(8000, gt=0, lt=65536)
    """The port `ragpg serve` listens on (--port overrides it)."""
    concurrency: PositiveInt = 8
    """Requests a server worker runs at once; the database pool holds at least this many connections."""
    queue_size: NonNegativeInt = 64
    """Requests that may wait for a free slot; past concurrency + queue_size a request is refused at once
    with 429 and Retry-After."""
    llm_concurrency: PositiveInt = 4
    """Of the `concurrency` slots, how many requests that may wait on the language model may hold (`/v1/ask`,
    `/v1/context`, the MCP tools ask_notes and get_context, when an LLM is configured); more wait for one of
    these (within queue_size, then 429), so the other slots stay free for routes that never call the model.
    At most concurrency - 1 (with concurrency 1, they share its one slot)."""
    retry_after_s: NonNegativeInt = 1
    """Seconds the Retry-After header of a 429 or 503 asks the client to wait."""
    max_body_bytes: PositiveInt = 1024 * 1024
    """The largest request body accepted, in bytes; a larger one is refused with 413."""
    # Checking a key is then a read, not a write and a commit on every request (requests sharing a key
    # would queue on its row).
    key_touch_interval_s: NonNegativeFloat = 60.0
    """An API key's last_used_at moves at most this often (seconds). 0: on every request."""
    api_key: str | None = None
    """A key to create at start when it does not exist yet, with full access to every vault, so a server on
    0.0.0.0 never starts keyless (docker-compose passes RAGPG_API_KEY). Masked in `ragpg config show`."""
    # A web page that rebinds its own domain to 127.0.0.1 (DNS rebinding) cannot reach the API under
    # that domain: the Host check runs before any handler or key check.
    allowed_hosts: tuple[Annotated[str, Field(pattern=HOST_ENTRY_PATTERN)], ...] = Field(
        (), examples=[["ragpg.example.org"]])
    """Host names requests may carry in their Host header besides 127.0.0.1, localhost and [::1] with the
    bound port (and the bound address): the names clients use through a proxy or between docker-compose
    services. "name" matches any port, "name:port" that port only. Any other Host gets 421."""
    allowed_origins: tuple[Annotated[str, Field(pattern=ORIGIN_PATTERN)], ...] = Field(
        (), examples=[["https://app.example.org"]])
    """Web origins ("https://app.example.org") whose pages may call the API from a browser; they alone get
    CORS headers. A request from any other origin than the server's own gets 403."""
    header_timeout_s: PositiveFloat = 10.0
    """Seconds a client has to send a request's headers after connecting (or after the previous response);
    a slower one gets 408 and is disconnected."""
    body_timeout_s: PositiveFloat = 30.0
    """Seconds a client has to send a request's body after its headers; a slower one gets 408."""
