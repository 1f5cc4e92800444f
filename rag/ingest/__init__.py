"""Ingestion: walk a vault (`walk`, `globs`, `presence`), parse markdown and frontmatter
(`parse`), chunk (`chunk`), guard the text (`guard`: injection signals, secret masking), embed
and write in batches (`pipeline`, `store`, `writer`, `hnsw`, `beir`), watch for changes
(`watch`), report (`report`), and run index jobs in the background for the server (`index_runs`).

May import: the shared basics, `rag.store`, `rag.embed`, `rag.tokens`. Never retrieval, context,
notes, the CLI or the server.
"""
