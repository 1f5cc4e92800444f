"""Ingestion: walk a vault (`walk`, `globs`, `presence`), turn canvas boards and PDF attachments into
markdown, a section per card or page (`formats`, `canvas`, `pdf` with the optional `pdf` extra,
`sections`), parse markdown and frontmatter (`parse`), chunk (`chunk`), read each note's links and resolve them once per run, once per
confidentiality level (`links`, `link_resolution`) and embed each note's outline and inbound link lines (`note_vectors`), flag
injection attempts (`guard`), embed and write in batches
(`pipeline`, `store`, `writer`, `hnsw`, `beir`), watch for changes (`watch`), report (`report`), and
run index jobs in the background for the server (`index_runs`).

Secrets never leave ingestion unmasked (rules in `rag.secrets`): file and folder names are masked
in the walk (the masked path is the document's identity), a note's text before it is chunked, and
every other field in `store.attach_chunks`, so nothing written or embedded holds one. A vault run
fails alone, in one line: a root that is empty, or lost its `.obsidian` marker, while documents of
it are stored is unavailable (nothing is removed) unless `allow_empty` confirms it.

May import: the shared basics, `rag.store`, `rag.embed`, `rag.tokens`. Never retrieval, context,
notes, the CLI or the server.
"""
