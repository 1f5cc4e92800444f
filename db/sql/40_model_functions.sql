-- Per-model match functions, generated for each registered embedding model.
-- (Placeholder until the retrieval functions land; see issue #4.)
create or replace function ragpg_create_model_functions(m embedding_models) returns void
language plpgsql volatile
set search_path = public, pg_catalog
as $$
begin
    return;
end
$$;
