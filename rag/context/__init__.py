"""Context assembly: ranked chunks → one prompt context under a token budget, with citations,
and the evidence packs built from it (`assemble`, `evidence`).

May import: the shared basics (`rag.errors`, `rag.arguments`, `rag.config`, `rag.types`, `rag.tokens`, `rag.text`)
and the secret masking of `rag.secrets`; never retrieval, the store, the CLI or the server.
"""
