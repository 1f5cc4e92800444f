"""The database: how to connect (`database`), where it is (`locate`: DATABASE_URL or the
embedded server, `embedded`, and who may log in to it, `client_auth`), the pools a runtime holds
(`pools`: the primary's and the read replica's, connections that read as a scope), the schema
lifecycle (`migrate`: alembic revisions in rag.db, the SQL files re-applied after each upgrade),
the outage guard of a pool (`outage`), one SQL call's transaction and error mapping (`calls`), the
small registries kept in tables: embedding models (`models`), vaults (`vaults`), API keys (`keys`),
the query log's background writer (`query_log`), the read replica's replay wait (`replica`), and
clearance in the database (`row_security`: scoped reads, console logins).

May import: the shared basics (`rag.config`, `rag.errors`, `rag.access`). Never a stage above it.
"""
