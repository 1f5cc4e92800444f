-- Folder centroids: folders (documents.folder, '' = the vault root) ranked by the cosine similarity of
-- the query to the mean embedding (pgvector avg(vector)) of the folder's chunks, for one model.
--   select * from match_folders_<name>('[...]'::vector, vault_ids => array[1, 2], match_count => 20);
-- (create or replace: when a signature changes, add `drop function if exists <old signature>;` first.)

create or replace function ragpg_match_folders_impl(p_table text, p_dims integer, p_model text,
                                         query_embedding vector, vault_ids bigint[], match_count integer)
returns table (vault_id bigint, vault text, folder text, chunk_count bigint, similarity float8)
language plpgsql stable
set search_path = public, pg_catalog, pg_temp
as $$
begin
    perform ragpg_check_vector_query(query_embedding, p_dims, p_model, 0, match_count);
    return query execute format(
        'with centroids as (
             select c.vault_id, d.folder, count(*) as n, avg(e.embedding) as centroid
             from %I e
             join chunks c on c.vault_id = e.vault_id and c.id = e.chunk_id
             join documents d on d.vault_id = c.vault_id and d.id = c.document_id
             where $2::bigint[] is null or e.vault_id = any($2)
             group by c.vault_id, d.folder
         )
         select ce.vault_id, v.name, ce.folder, ce.n,
                case when vector_norm(ce.centroid) = 0 then 0::float8 else 1 - (ce.centroid <=> $1) end as similarity
         from centroids ce
         join vaults v on v.id = ce.vault_id
         order by 5 desc, v.name, ce.folder
         limit $3', p_table)
        using query_embedding, vault_ids, match_count;
end
$$;

-- Called by ragpg_create_model_functions (40_model_functions.sql).
create or replace function ragpg_create_folder_functions(m embedding_models, p_set text) returns void
language plpgsql volatile
set search_path = public, pg_catalog, pg_temp
as $$
declare
    v_name text := ragpg_model_function_name(m, 'folders');
    v_label text := m.provider || '/' || m.model;
begin
    perform ragpg_define_function(v_name, 'vector, bigint[], integer', format(
        '%I(query_embedding vector, vault_ids bigint[] default null, match_count integer default 50)
         returns table (vault_id bigint, vault text, folder text, chunk_count bigint, similarity float8)
         language sql stable
         set search_path = public, pg_catalog, pg_temp
         as %L',
        v_name,
        format('select * from ragpg_match_folders_impl(%L, %s, %L, query_embedding, vault_ids, match_count)',
               m.embedding_table, m.dims, v_label)));
    execute format('comment on function %I(vector, bigint[], integer) is %L', v_name,
                   format('Folders ranked by similarity to their mean chunk embedding (model %s).', v_label));
end
$$;
