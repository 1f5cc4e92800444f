-- Bulk loads (rag/ingest/bulk.py): the secondary indexes of `chunks`, and the primary key of
-- `bm25_postings` (50-100 rows per chunk), are dropped before a load that dwarfs the chunks table
-- and built once after it (after the BM25 pass, which then inserts into a bare heap). Each GIN insert
-- costs far more than its share of a build (measured: 50k chunks COPYed in 13.5 s with two GIN
-- indexes, the metadata's and a tsvector index since dropped (revision 0016), 7.3 s without, and
-- 1.4 s to build both afterwards); 5.8M postings went in in 19 s with
-- the primary key and in ~6.5 s without it, plus 4.4 s to build it. As for HNSW indexes (10_embedding_models.sql), the definitions are
-- code, here, the same as the migrations' (0001, 0009; a test compares them), never read back from
-- a table. Kept during a load: the primary key, unique (document_id, ordinal), chunks_vault_idx
-- (the BM25 restore reads the vault's chunks by it) and the partial chunks_folder_array_idx and
-- chunks_date_array_idx (empty unless folders or dates are arrays).

create or replace function ragpg_create_chunk_indexes() returns integer
language plpgsql volatile
set search_path = public, pg_catalog, pg_temp
as $$
declare
    v_missing integer := 0;
begin
    if to_regclass('chunks_metadata_idx') is null then
        create index chunks_metadata_idx on chunks using gin (metadata jsonb_path_ops);
        v_missing := v_missing + 1;
    end if;
    if to_regclass('chunks_folder_idx') is null then
        create index chunks_folder_idx on chunks ((metadata ->> 'folder') text_pattern_ops);
        v_missing := v_missing + 1;
    end if;
    if to_regclass('chunks_date_idx') is null then
        create index chunks_date_idx on chunks (((metadata ->> 'date') collate "C"));
        v_missing := v_missing + 1;
    end if;
    if to_regclass('bm25_postings_pkey') is null then
        alter table bm25_postings add constraint bm25_postings_pkey
            primary key (vault_id, lexeme, chunk_id) include (tf, dl, text_search_config);
        v_missing := v_missing + 1;
    end if;
    perform ragpg_secure_partitions();  -- names each partition's new indexes (12_vault_partitions.sql)
    return v_missing;
end
$$;

-- Drops them; returns each dropped index's qualified name and definition (recorded in
-- deferred_indexes for inspection; ragpg_create_chunk_indexes rebuilds them).
create or replace function ragpg_drop_chunk_indexes()
returns table (index_name text, definition text)
language plpgsql volatile
set search_path = public, pg_catalog, pg_temp
as $$
declare
    v_name text;
    v_index regclass;
begin
    foreach v_name in array array['chunks_metadata_idx', 'chunks_folder_idx', 'chunks_date_idx',
                                  'bm25_postings_pkey'] loop
        v_index := to_regclass(v_name);
        continue when v_index is null;
        select format('%I.%I', n.nspname, c.relname), pg_get_indexdef(c.oid) into index_name, definition
        from pg_class c join pg_namespace n on n.oid = c.relnamespace where c.oid = v_index;
        if v_name = 'bm25_postings_pkey' then
            alter table bm25_postings drop constraint bm25_postings_pkey;
        else
            execute format('drop index %s', index_name);
        end if;
        return next;
    end loop;
end
$$;

-- One vault's graph of a model (rag/ingest/bulk.py): a load of one vault defers only its own HNSW
-- index, never the other vaults' graphs. An index attached to the parent's cannot be dropped alone,
-- so the vault's partition of the embeddings table is detached (its graph then dropped); the load
-- COPYs into that table, and attaching it back builds the graph the parent's index asks for, over
-- this vault's rows only. Meanwhile a vector search of the vault finds none of its vectors (the
-- load's own vault: its earlier rows are few, or the load would not defer). Nothing else references
-- an embeddings table, so the detach checks no foreign key.

-- The embeddings table and vault a partition name belongs to (no row: not such a partition).
create or replace function ragpg_embedding_partition(p_partition text, out parent text, out vault_id bigint)
returns setof record
language sql stable
set search_path = public, pg_catalog, pg_temp
as $$
    select m.embedding_table, v.id
    from embedding_models m cross join vaults v
    where ragpg_vault_partition_name(m.embedding_table, v.id) = p_partition
$$;

-- Detaches the vault's partition and drops its HNSW graph; returns what was dropped (for
-- deferred_indexes, as ragpg_drop_hnsw_index does), or no row when it has none.
create or replace function ragpg_defer_vault_hnsw(p_partition text)
returns table (index_name text, definition text)
language plpgsql volatile
set search_path = public, pg_catalog, pg_temp
as $$
declare
    p record;
    v_part regclass := to_regclass(quote_ident(p_partition));
begin
    select * into p from ragpg_embedding_partition(p_partition);
    if p.parent is null or v_part is null then
        raise exception using errcode = '42704', message = format('%s is not a vault''s embeddings partition', p_partition);
    end if;
    if exists (select from pg_inherits h where h.inhrelid = v_part) then
        execute format('alter table %I detach partition %I', p.parent, p_partition);
    end if;
    return query
    select d.* from pg_index i join pg_class c on c.oid = i.indexrelid join pg_am a on a.oid = c.relam
    cross join lateral ragpg_drop_index_recorded(i.indexrelid::regclass) d
    where i.indrelid = v_part and a.amname = 'hnsw';
end
$$;

-- Attaches the vault's partition back (idempotent): Postgres builds, on this partition only, the
-- indexes of the parent it lacks (the graph), and they take the parent's names.
create or replace function ragpg_restore_vault_hnsw(p_partition text) returns void
language plpgsql volatile
set search_path = public, pg_catalog, pg_temp
as $$
declare
    p record;
    v_part regclass := to_regclass(quote_ident(p_partition));
begin
    select * into p from ragpg_embedding_partition(p_partition);
    if p.parent is null or v_part is null then
        return;  -- the vault (or model) was removed meanwhile: nothing to build
    end if;
    if not exists (select from pg_inherits h where h.inhrelid = v_part) then
        execute format('alter table %I attach partition %I for values in (%s)', p.parent, p_partition, p.vault_id);
    end if;
    perform ragpg_name_partition_indexes(v_part, p.vault_id);
end
$$;

-- Rebuilds what a bulk load dropped from `p_table`: the chunks table's secondary indexes, a
-- model's HNSW index, or one vault's graph (`p_table` its partition); rag/ingest/hnsw.py calls this
-- for every row of deferred_indexes.
create or replace function ragpg_create_deferred_indexes(p_table text) returns void
language plpgsql volatile
set search_path = public, pg_catalog, pg_temp
as $$
begin
    if p_table = 'chunks' then
        perform ragpg_create_chunk_indexes();
    elsif exists (select from embedding_models m where m.embedding_table = p_table) then
        perform ragpg_create_hnsw_index(p_table);
    else
        perform ragpg_restore_vault_hnsw(p_table);  -- one vault's partition (above)
    end if;
end
$$;

-- The other half: drops what ragpg_create_deferred_indexes rebuilds.
create or replace function ragpg_drop_deferrable_indexes(p_table text)
returns table (index_name text, definition text)
language plpgsql volatile
set search_path = public, pg_catalog, pg_temp
as $$
begin
    if p_table = 'chunks' then
        return query select * from ragpg_drop_chunk_indexes();
    elsif exists (select from embedding_models m where m.embedding_table = p_table) then
        return query select * from ragpg_drop_hnsw_index(p_table);
    else
        return query select * from ragpg_defer_vault_hnsw(p_table);
    end if;
end
$$;
