"""The notes-vault answering workflow behind `rag.ask` and `rag.search`.

- `settings`   — `NotesSettings`, the workflow's tunables and defaults;
- `folders`    — folder selection (user folders, LLM ranking, centroid fallback);
- `rerank`     — lexical rerank, blend with the vector score, floors, auto-K, confidence bands;
- `format`     — the notes context format, citation parsing and matching, snippets;
- `extractive` — the answer without a language model.
"""
