"""The notes profile's last steps behind `rag.ask` and `rag.search` (docs/architecture.md, "ask and
search, step by step").

Retrieval and ranking are the shared stages (`rag.retrieval.stage`, `rag.retrieval.rank`); this package only adds:

- `ask`        — `ask` and `search`: the question → the evidence → one decision → the answer;
- `evidence`   — scope, the shared retrieve and rank stages, the evidence vault's term statistics;
- `scope`      — vaults, the folders the user named, clearance, and the folder prior (never a blindfold);
- `folders`    — folder listing and ranking (user folders, LLM ranking, centroid fallback);
- `question`   — the question read once: its terms, names, parts, the detail hint and auto-K;
- `decision`   — the one answer/abstain record: judged within the evidence's vault, the names rule
                 ("Your notes mention X but not Y"), then the model over `signals`; its reasons (one table);
- `signals`    — the decision's signals and the calibrated model over them, fitted on the golden set's dev split;
- `shapes`     — the answer's shape from the question's form (duration, amount, keys, steps, ...);
- `answer`     — the LLM answer (its context assembled by `rag.context.assemble` under a token
                 budget) or the extractive one, references, the LLM-declines path;
- `citations`  — the one citation, `[File: name.md, Section: ...]`: labels, block headers, matching;
- `extractive` — sentence scoring and the quoted answer without a language model;
- `steps`      — a passage's lists read as procedures, quoted as steps for a how-to question;
- `ask_trace`  — the typed record of every step that `--debug`, `--explain`, the web page and Langfuse read;
- `explain`    — `ragpg ask --explain` in plain words;
- `search_floor` — a query sharing no word and no meaning with the notes finds nothing;
- `related`    — `rag.related`, the notes related to one;
- `format`     — section labels, markdown as plain text, snippets;
- `results`    — the response records (also the HTTP response models); `browse` — a vault's folders;
- `settings`   — reads `rag.config.NotesSettings`.

May import: the shared basics, `rag.store`, `rag.retrieval`, `rag.context`, `rag.runtime`, `rag.llm`,
`rag.prompts`, `rag.ingest.guard` (injection flags). Never eval, the CLI or the server.
"""
