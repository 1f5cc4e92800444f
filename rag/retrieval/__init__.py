"""The retrieve stage every entry point shares: SQL match calls, the Auto-RAG decision tree, facets.

`compute_context`, notes `ask` / `search` and the HTTP routes all get their candidates from
`rag.retrieval.stage.retrieve_stage`; ranking (`rag.retrieval.rank`) and assembly (`rag.context.assemble`) follow.
May import: rag.retrieval.retrieve, rag.retrieval.passes, rag.retrieval.autorag, rag.retrieval.profiles, rag.runtime, rag.llm, rag.prompts,
rag.text, rag.types. Never imports the notes workflow, the CLI or the server.
"""
