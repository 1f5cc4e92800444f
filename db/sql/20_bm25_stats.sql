-- Corpus statistics for BM25 (chunk count, total length, per-lexeme chunk frequency),
-- maintained by statement-level triggers so a batch insert updates each lexeme once.

create or replace function ragpg_bm25_stats_add() returns trigger
language plpgsql volatile
set search_path = public, pg_catalog
as $$
begin
    insert into bm25_vault_stats as s (vault_id, chunk_count, total_length)
    select vault_id, count(*), sum(lexeme_count) from new_rows group by vault_id
    on conflict (vault_id) do update
        set chunk_count = s.chunk_count + excluded.chunk_count,
            total_length = s.total_length + excluded.total_length;

    -- Ordered so concurrent writers lock term rows in the same order (no deadlocks).
    insert into bm25_term_stats as t (vault_id, lexeme, chunk_frequency)
    select n.vault_id, u.lexeme, count(*)
    from new_rows n cross join lateral unnest(n.content_tsv) as u
    group by n.vault_id, u.lexeme
    order by n.vault_id, u.lexeme
    on conflict (vault_id, lexeme) do update
        set chunk_frequency = t.chunk_frequency + excluded.chunk_frequency;
    return null;
end
$$;

create or replace function ragpg_bm25_stats_remove() returns trigger
language plpgsql volatile
set search_path = public, pg_catalog
as $$
begin
    update bm25_vault_stats s
    set chunk_count = s.chunk_count - o.n, total_length = s.total_length - o.len
    from (select vault_id, count(*) as n, sum(lexeme_count) as len from old_rows group by vault_id) o
    where s.vault_id = o.vault_id;

    with gone as (
        select o.vault_id, u.lexeme, count(*) as n
        from old_rows o cross join lateral unnest(o.content_tsv) as u
        group by o.vault_id, u.lexeme
    )
    update bm25_term_stats t
    set chunk_frequency = t.chunk_frequency - g.n
    from gone g
    where t.vault_id = g.vault_id and t.lexeme = g.lexeme;

    -- Only the lexemes just touched can have dropped to zero.
    delete from bm25_term_stats t
    using (select distinct o.vault_id, u.lexeme
           from old_rows o cross join lateral unnest(o.content_tsv) as u) g
    where t.vault_id = g.vault_id and t.lexeme = g.lexeme and t.chunk_frequency <= 0;
    return null;
end
$$;

create or replace trigger chunks_bm25_insert
    after insert on chunks referencing new table as new_rows
    for each statement execute function ragpg_bm25_stats_add();

create or replace trigger chunks_bm25_delete
    after delete on chunks referencing old table as old_rows
    for each statement execute function ragpg_bm25_stats_remove();

create or replace trigger chunks_bm25_update_remove
    after update on chunks referencing old table as old_rows
    for each statement execute function ragpg_bm25_stats_remove();

create or replace trigger chunks_bm25_update_add
    after update on chunks referencing new table as new_rows
    for each statement execute function ragpg_bm25_stats_add();
