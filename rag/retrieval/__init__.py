"""Retrieval: from a query to ranked candidates, the stage every entry point shares.

- `retrieve` — typed calls to the SQL match functions (vector, lexical, hybrid, folders);
- `query_vectors` — a query embedding checked and sent binary (or as text) to those functions;
- `filters`  — Python-side checks of metadata filters (SQL compiles them);
- `passes`   — one retrieval pass of a profile → `Candidate`s;
- `autorag`, `run`, `routes`, `stage` — the Auto-RAG decision tree (`stage.retrieve_stage`);
- `facets`, `terms` — multi-facet queries, per-term statistics;
- `rank`     — fusion and the final score (its tunables and Auto-RAG's: the profiles, `rag.config_profiles`);
- `chunks`   — one chunk by its reference (vault, source path, ordinal);
- `documents` — a note's stored passages by its path or name, and the notes a scope may read;
- `note_names` — a note as a reader names it (path, path without `.md`, file name, alias), resolved by
  the link rule (`rag.link_names`) among the notes the scope may read;
- `related`  — the notes linked with one either way, then the closest in meaning (the link graph);
- `note_signal` — how close a question comes to each candidate note as a whole (its note vectors).

`compute_context`, notes `ask` / `search` and the HTTP routes all get their candidates from
`retrieval.stage.retrieve_stage` and rank them with `retrieval.rank`; `rag.context` follows.
May import: the shared basics, `rag.store`, `rag.llm`, `rag.trace`, `rag.prompts`; it receives the
runtime (`rag.runtime`, the composition root) from its caller and names it for types only.
Never context, notes, ingest, the CLI or the server.
"""
