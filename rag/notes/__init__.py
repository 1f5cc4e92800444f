"""The notes profile's last steps behind `rag.ask` and `rag.search` (docs/architecture.md, "ask and
search, step by step").

Retrieval and ranking are the shared stages (`rag.retrieval.stage`, `rag.retrieval.rank`); this package only adds:

- `ask`        — `ask` and `search`: scope → shared retrieve and rank → the steps below;
- `scope`      — vaults, the folders the user named, clearance, and the folder prior (never a blindfold);
- `folders`    — folder listing and ranking (user folders, LLM ranking, centroid fallback);
- `question`   — the question's terms, the detail hint and auto-K;
- `decision`   — the one answer/abstain record: judged within the evidence's vault, the names rule
                 ("Your notes mention X but not Y"), then the model of `abstain`; its reasons;
- `abstain`    — calibrated abstention from signals, fitted on the golden set's dev split;
- `shapes`     — the answer's shape from the question's form (duration, amount, keys, steps, ...);
- `answer`     — the LLM answer (its context assembled by `rag.context.assemble` under a token
                 budget) or the extractive one, references, the LLM-declines path;
- `citations`  — the one citation, `[File: name.md, Section: ...]`: labels, block headers, matching;
- `extractive` — sentence scoring and the quoted answer without a language model;
- `explain`    — `ragpg ask --explain` in plain words;
- `format`     — section labels, markdown as plain text, snippets;
- `results`    — the response records (also the HTTP response models); `browse` — a vault's folders;
- `settings`   — reads `rag.config.NotesSettings`.

May import: the shared basics, `rag.store`, `rag.retrieval`, `rag.context`, `rag.runtime`, `rag.llm`,
`rag.prompts`, `rag.ingest.guard` (injection flags). Never eval, the CLI or the server.
"""
