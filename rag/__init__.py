"""ragpg: Postgres-native retrieval for RAG."""

__version__ = "0.1.0"
