"""ragpg as the retriever of a chat framework: LangChain (`rag.integrations.langchain`, extra
`ragpg[langchain]`) and LlamaIndex (`rag.integrations.llamaindex`, extra `ragpg[llamaindex]`).

`import rag` never imports this package, and this package imports no framework: each module
imports its framework when it is imported, failing with one line naming the extra to install.

- `passages`   — one `compute_context` call in process or over HTTP (`POST /v1/context`), and the
                 first k passages of its context with their metadata; no framework;
- `langchain`  — `RagpgRetriever` (passages as Documents), `RagpgContextRetriever` (the context);
- `llamaindex` — `RagpgLlamaRetriever` (passages as NodeWithScores).

May import: rag's public face and the modules it names (`rag.compute`, `rag.context.result`,
`rag.runtime`, `rag.access`, `rag.errors`, `rag.extras`, `rag.types`) and `rag.obsidian` (the text
a reader sees); nothing in rag imports this package.
"""
