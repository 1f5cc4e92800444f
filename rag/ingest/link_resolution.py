"""Link resolution lives in `rag.link_names` (shared with retrieval, which resolves the names readers
give notes by the same rule); this name stays for ingestion's imports."""

from rag.link_names import LinkResolver, Reason, Resolution

__all__ = ["LinkResolver", "Reason", "Resolution"]
