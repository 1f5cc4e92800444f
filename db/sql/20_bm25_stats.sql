-- Corpus statistics for BM25 (chunk count, total length, per-lexeme chunk frequency) and the
-- postings (vault, lexeme) -> (chunk, tf, dl) that scoring reads (db/sql/50_lexical.sql),
-- maintained by statement-level triggers so a batch insert updates each lexeme once and writes
-- all its postings in one set-based insert.
--
-- The statistics are kept per vault AND confidentiality level (ragpg_chunk_level, migration 0012):
-- a reader sums the levels it may read (row-level security on the level, 80_security.sql), so its
-- BM25 idf and average length come only from chunks it can see and move not at all when a note
-- above its clearance is added or removed; the owner sums every level, the same figures as one row
-- per vault gave.
--
-- One function serves insert, delete and update: an update must remove the old rows' postings
-- before adding the new rows' (same primary keys), and two separate update triggers would fire
-- in name order, not in that one. Transition tables: old_rows (delete, update), new_rows
-- (insert, update).

-- What BM25 reads of a chunk: the note's names (its file name without extension, then its aliases),
-- the heading path, the text; the rule of rag/ingest/passage_text.py, from the same stored metadata. A
-- BEIR entry (metadata beir_id) is a document, not a note: heading path and text only, as before.
create or replace function ragpg_note_names(p_metadata jsonb) returns text
language sql immutable parallel safe
set search_path = public, pg_catalog, pg_temp
as $$
    select case when p_metadata ? 'beir_id' or coalesce(p_metadata->>'source_path', '') = '' then null
           else concat_ws(' ', regexp_replace(regexp_replace(p_metadata->>'source_path', '^.*/', ''), '\.[^.]*$', ''),
                          (select string_agg(a, ' ') from jsonb_array_elements_text(
                               case when jsonb_typeof(p_metadata->'aliases') = 'array' then p_metadata->'aliases'
                                    else '[]'::jsonb end) a))
           end
$$;

create or replace function ragpg_chunk_search_text(p_heading_path text, p_content text, p_metadata jsonb)
returns text
language sql immutable parallel safe
set search_path = public, pg_catalog, pg_temp
as $$
    select concat_ws(' ', ragpg_note_names(p_metadata), p_heading_path, p_content)
$$;

-- content_tsv and lexeme_count (revision 0004): ONE to_tsvector per chunk, where two generated
-- columns ran the parser and stemmer twice. Like generated columns they cannot be written
-- directly: an insert always computes them, an update recomputes them when the text or its config
-- changed and otherwise keeps the old values.
create or replace function ragpg_chunks_tsvector() returns trigger
language plpgsql volatile
set search_path = public, pg_catalog, pg_temp
as $$
begin
    if tg_op = 'UPDATE' and new.heading_path is not distinct from old.heading_path
            and new.content is not distinct from old.content
            and ragpg_note_names(new.metadata) is not distinct from ragpg_note_names(old.metadata)
            and new.text_search_config is not distinct from old.text_search_config then
        new.content_tsv := old.content_tsv;
        new.lexeme_count := old.lexeme_count;
        return new;
    end if;
    new.content_tsv := to_tsvector(new.text_search_config,
                                   ragpg_chunk_search_text(new.heading_path, new.content, new.metadata));
    new.lexeme_count := ragpg_tsvector_token_count(new.content_tsv);
    return new;
end
$$;

create or replace trigger chunks_tsvector
    before insert or update on chunks
    for each row execute function ragpg_chunks_tsvector();

create or replace function ragpg_bm25_stats_sync() returns trigger
language plpgsql volatile
set search_path = public, pg_catalog, pg_temp
as $$
declare
    -- A bulk load is deferring some vault's bookkeeping (ragpg_bm25_defer): that vault's rows above
    -- its watermark have no postings and are not counted; ragpg_bm25_restore adds them in one pass.
    -- Looked up once per statement; without a deferral (the usual case) the per-row test in the
    -- statements below is never evaluated. (Inline rather than a function: one the planner can
    -- see into.)
    v_deferring boolean := exists (select from bm25_deferred);
    v_old boolean;
    v_new boolean;
begin
    if ragpg_moving_vault() then
        return null;  -- a vault's rows moving between partitions, unchanged (12_vault_partitions.sql)
    end if;
    v_old := tg_op in ('DELETE', 'UPDATE');
    v_new := tg_op in ('INSERT', 'UPDATE');
    -- A statement of deferred rows only (every batch of a bulk load) has nothing to do here. (Separate
    -- ifs: a transition table exists only for the operations that have one.)
    if v_deferring and v_old then
        v_old := exists (select from old_rows r where not exists (
            select from bm25_deferred d where d.vault_id = r.vault_id and r.id > d.after_chunk_id));
    end if;
    if v_deferring and v_new then
        v_new := exists (select from new_rows r where not exists (
            select from bm25_deferred d where d.vault_id = r.vault_id and r.id > d.after_chunk_id));
    end if;

    if v_old then
        update bm25_vault_stats s
        set chunk_count = s.chunk_count - o.n, total_length = s.total_length - o.len
        from (select vault_id, ragpg_chunk_level(metadata) as level, count(*) as n, sum(lexeme_count) as len
              from (select * from old_rows r where not v_deferring or not exists (
                  select from bm25_deferred d where d.vault_id = r.vault_id and r.id > d.after_chunk_id)) o
              group by 1, 2) o
        where s.vault_id = o.vault_id and s.level = o.level;

        -- By primary key: every posting of an old row is (its vault, one of its lexemes, its id).
        delete from bm25_postings p
        using (select * from old_rows r where not v_deferring or not exists (
                  select from bm25_deferred d where d.vault_id = r.vault_id and r.id > d.after_chunk_id)) o
              cross join lateral unnest(o.content_tsv) as u
        where p.vault_id = o.vault_id and p.lexeme = u.lexeme and p.chunk_id = o.id;

        with gone as (
            select o.vault_id, u.lexeme, ragpg_chunk_level(o.metadata) as level, count(*) as n
            from (select * from old_rows r where not v_deferring or not exists (
                  select from bm25_deferred d where d.vault_id = r.vault_id and r.id > d.after_chunk_id)) o
                 cross join lateral unnest(o.content_tsv) as u
            group by 1, 2, 3
        )
        update bm25_term_stats t
        set chunk_frequency = t.chunk_frequency - g.n
        from gone g
        where t.vault_id = g.vault_id and t.lexeme = g.lexeme and t.level = g.level;

        -- Only the lexemes just touched can have dropped to zero.
        delete from bm25_term_stats t
        using (select distinct o.vault_id, u.lexeme, ragpg_chunk_level(o.metadata) as level
               from old_rows o cross join lateral unnest(o.content_tsv) as u) g
        where t.vault_id = g.vault_id and t.lexeme = g.lexeme and t.level = g.level and t.chunk_frequency <= 0;
    end if;

    if v_new then
        insert into bm25_vault_stats as s (vault_id, level, chunk_count, total_length)
        select vault_id, ragpg_chunk_level(metadata), count(*), sum(lexeme_count)
        from (select * from new_rows r where not v_deferring or not exists (
                  select from bm25_deferred d where d.vault_id = r.vault_id and r.id > d.after_chunk_id)) n
        group by 1, 2
        on conflict (vault_id, level) do update
            set chunk_count = s.chunk_count + excluded.chunk_count,
                total_length = s.total_length + excluded.total_length;

        -- Ordered so concurrent writers lock term rows in the same order (no deadlocks). Sorts here
        -- use collate "C" (byte order): the database's default collation may be a libc one (the
        -- embedded server's C.UTF-8 is), whose strcoll comparisons made sorting a bulk load's
        -- postings ~40% slower; the order only needs to be consistent and close to the btree's.
        insert into bm25_term_stats as t (vault_id, lexeme, level, chunk_frequency)
        select n.vault_id, u.lexeme, ragpg_chunk_level(n.metadata), count(*)
        from (select * from new_rows r where not v_deferring or not exists (
                  select from bm25_deferred d where d.vault_id = r.vault_id and r.id > d.after_chunk_id)) n
             cross join lateral unnest(n.content_tsv) as u
        group by 1, 2, 3
        order by n.vault_id, u.lexeme collate "C", 3
        on conflict (vault_id, lexeme, level) do update
            set chunk_frequency = t.chunk_frequency + excluded.chunk_frequency;

        -- tf: the lexeme's positions in the chunk (1 when the tsvector holds none). In primary-key
        -- order: the btree then fills leaf pages left to right instead of jumping between them
        -- (a third less time for SciFact's ~490k postings).
        insert into bm25_postings (vault_id, lexeme, chunk_id, tf, dl, text_search_config)
        select n.vault_id, u.lexeme, n.id, coalesce(cardinality(u.positions), 1), n.lexeme_count,
               n.text_search_config
        from (select * from new_rows r where not v_deferring or not exists (
                  select from bm25_deferred d where d.vault_id = r.vault_id and r.id > d.after_chunk_id)) n
             cross join lateral unnest(n.content_tsv) as u
        order by n.vault_id, u.lexeme collate "C", n.id;
    end if;
    return null;
end
$$;

-- The three statement-level triggers (<p_prefix>_insert, _delete, _update) that keep a table derived
-- from chunks in step, each handing p_function its transition tables (new_rows, old_rows). Also
-- 55_bm25_index.sql's. Only the owner of chunks can create its triggers; nobody else needs this.
create or replace function ragpg_create_chunk_triggers(p_prefix text, p_function text) returns void
language plpgsql volatile
set search_path = public, pg_catalog, pg_temp
as $$
declare
    v record;
begin
    for v in select * from (values ('insert', 'new table as new_rows'), ('delete', 'old table as old_rows'),
                                   ('update', 'old table as old_rows new table as new_rows')) t (event, tables) loop
        execute format('create or replace trigger %I after %s on chunks referencing %s '
                       'for each statement execute function %I()', p_prefix || '_' || v.event, v.event, v.tables,
                       p_function);
    end loop;
end
$$;
revoke all on function ragpg_create_chunk_triggers(text, text) from public;

select ragpg_create_chunk_triggers('chunks_bm25', 'ragpg_bm25_stats_sync');

-- Replaced by ragpg_bm25_stats_sync and chunks_bm25_update (revision 0003).
drop trigger if exists chunks_bm25_update_remove on chunks;
drop trigger if exists chunks_bm25_update_add on chunks;
drop function if exists ragpg_bm25_stats_add();
drop function if exists ragpg_bm25_stats_remove();

-- Bulk loads (rag/ingest/bulk.py): BM25 bookkeeping for a vault's new chunks in one pass at the end.
--   select ragpg_bm25_defer(vault_id);    -- chunks inserted from now on are left out by the triggers
--   ... load ...
--   select ragpg_bm25_restore(vault_id);  -- their statistics and postings, as the triggers would have
-- The watermark is the chunk id sequence's last value: every chunk already stored has an id at or
-- below it, every chunk inserted later one above it (index runs of one vault are serialised).
create or replace function ragpg_bm25_defer(p_vault_id bigint) returns boolean
language plpgsql volatile
set search_path = public, pg_catalog, pg_temp
as $$
begin
    insert into bm25_deferred (vault_id, after_chunk_id)
    values (p_vault_id, coalesce(pg_sequence_last_value(pg_get_serial_sequence('chunks', 'id')::regclass), 0))
    on conflict (vault_id) do nothing;
    return found;
end
$$;

-- Adds the deferred chunks' counts, chunk frequencies and postings with one set-based statement
-- each (the same values the triggers compute row set by row set); returns how many chunks that
-- covered (0 when the vault was not deferred).
create or replace function ragpg_bm25_restore(p_vault_id bigint) returns bigint
language plpgsql volatile
set search_path = public, pg_catalog, pg_temp
as $$
declare
    v_after bigint;
    v_chunks bigint;
begin
    delete from bm25_deferred where vault_id = p_vault_id returning after_chunk_id into v_after;
    if not found then
        return 0;
    end if;
    with n as (
        select ragpg_chunk_level(c.metadata) as level, count(*) as chunk_count,
               coalesce(sum(c.lexeme_count), 0) as total_length
        from chunks c where c.vault_id = p_vault_id and c.id > v_after
        group by 1
    ), added as (
        insert into bm25_vault_stats as s (vault_id, level, chunk_count, total_length)
        select p_vault_id, n.level, n.chunk_count, n.total_length from n
        on conflict (vault_id, level) do update
            set chunk_count = s.chunk_count + excluded.chunk_count,
                total_length = s.total_length + excluded.total_length
    )
    select sum(n.chunk_count) into v_chunks from n;

    insert into bm25_term_stats as t (vault_id, lexeme, level, chunk_frequency)
    select c.vault_id, u.lexeme, ragpg_chunk_level(c.metadata), count(*)
    from chunks c cross join lateral unnest(c.content_tsv) as u
    where c.vault_id = p_vault_id and c.id > v_after
    group by 1, 2, 3
    order by c.vault_id, u.lexeme collate "C", 3
    on conflict (vault_id, lexeme, level) do update
        set chunk_frequency = t.chunk_frequency + excluded.chunk_frequency;

    -- In primary-key order while the key's index exists (its leaf pages then fill left to right);
    -- a bulk load drops it (25_bulk_load.sql) and the rows go in as they come, no sort needed.
    if to_regclass('bm25_postings_pkey') is not null then
        insert into bm25_postings (vault_id, lexeme, chunk_id, tf, dl, text_search_config)
        select c.vault_id, u.lexeme, c.id, coalesce(cardinality(u.positions), 1), c.lexeme_count, c.text_search_config
        from chunks c cross join lateral unnest(c.content_tsv) as u
        where c.vault_id = p_vault_id and c.id > v_after
        order by c.vault_id, u.lexeme collate "C", c.id;
    else
        insert into bm25_postings (vault_id, lexeme, chunk_id, tf, dl, text_search_config)
        select c.vault_id, u.lexeme, c.id, coalesce(cardinality(u.positions), 1), c.lexeme_count, c.text_search_config
        from chunks c cross join lateral unnest(c.content_tsv) as u
        where c.vault_id = p_vault_id and c.id > v_after;
    end if;
    return coalesce(v_chunks, 0);
end
$$;
