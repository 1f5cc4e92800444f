-- The link graph at the console (the `links` table: db/migrations/versions/0015_links.py).
--   select * from ragpg_backlinks('notes', 'User interface/Ribbon.md');     -- notes that link here
--   select * from ragpg_outlinks('notes', 'Plugins/Random note.md');        -- what this note links to
--   select * from ragpg_unresolved_links('notes');                          -- links to notes that do not exist
--   select * from ragpg_linked_notes('notes', 'Plugins/Random note.md');    -- linked either way
--   select * from ragpg_similar_notes('notes', 'Plugins/Random note.md');   -- close in meaning
--   select * from ragpg_related_notes('notes', 'Plugins/Random note.md');   -- both, linked first
-- A link is resolved once per confidentiality level, among the notes of that level or below
-- (`link_targets`, one row per level from its source's up: db/migrations/versions/0019_link_targets_by_level.py),
-- and each reader follows the resolution of its own level (ragpg_caller_level): the owner's links reach
-- every note, a public reader's only public notes, and a note above a reader's level, named like a
-- link's target or not, changes nothing that reader sees.
-- Every function runs as its caller (security invoker): row-level security decides, so a reader sees
-- a link only with its source note, a resolution only of its level or below, and a resolved target's
-- path only when it may see that note too (otherwise the link reads as unresolved). A note the reader
-- may not see is "not found", exactly like one that does not exist.
-- (create or replace: when a signature changes, add `drop function if exists <old signature>;` first.)

-- The id of a note the caller may read, or an error: an unknown vault names the known ones (42704), a
-- missing or hidden note is P0002.
create or replace function ragpg_note_id(p_vault text, p_path text) returns bigint
language plpgsql stable
set search_path = public, pg_catalog, pg_temp
as $$
declare
    v_id bigint;
begin
    perform ragpg_check_vault_names(array[p_vault]);
    select d.id into v_id
    from documents d join vaults v on v.id = d.vault_id
    where v.name = p_vault and d.source_path = p_path;
    if v_id is null then
        raise exception using errcode = 'P0002', message = format('no note %L in vault %L', p_path, p_vault);
    end if;
    return v_id;
end
$$;

-- The level whose link resolutions the caller follows: its clearance (0, nothing, for a role bound to
-- none), or restricted (4) for a role row-level security does not bind (the owner). It only chooses
-- among the rows the caller may read: a level above its clearance finds none, and its links read as
-- unresolved (fail closed).
create or replace function ragpg_caller_level() returns integer
language plpgsql stable
set search_path = public, pg_catalog, pg_temp
as $$
begin
    if not pg_catalog.row_security_active('public.link_targets'::regclass) then
        return 4;
    end if;
    return ragpg_scope_clearance_rank(current_user);
end
$$;

-- One row per note that links here: its first such link (line, words, sentence) and how many it makes.
create or replace function ragpg_backlinks(p_vault text, p_path text)
returns table (source_path text, source_title text, link_count integer, line integer, kind text,
               anchor_text text, target_heading text, sentence text)
language sql stable
set search_path = public, pg_catalog, pg_temp
begin atomic
    select distinct on (s.source_path) s.source_path, s.title,
           (count(*) over (partition by s.source_path))::integer, l.line, l.kind, l.anchor_text, l.target_heading,
           l.sentence
    from link_targets r
    join links l on l.vault_id = r.vault_id and l.id = r.link_id
    join documents s on s.id = l.source_document_id
    where r.target_document_id = ragpg_note_id(p_vault, p_path) and r.level = (select ragpg_caller_level())
    order by s.source_path, l.line, l.id;
end;

create or replace function ragpg_outlinks(p_vault text, p_path text)
returns table (line integer, kind text, target_text text, target_path text, target_heading text,
               anchor_text text, sentence text)
language sql stable
set search_path = public, pg_catalog, pg_temp
begin atomic
    select l.line, l.kind, l.target_text, t.source_path, l.target_heading, l.anchor_text, l.sentence
    from links l
    left join link_targets r
        on r.vault_id = l.vault_id and r.link_id = l.id and r.level = (select ragpg_caller_level())
    left join documents t on t.id = r.target_document_id  -- a target the caller may not see stays null
    where l.source_document_id = ragpg_note_id(p_vault, p_path)
    order by l.line, l.id;
end;

-- Links to notes that do not exist (or that several notes' names match); attachments are left out. A
-- link to a note the caller may not read is listed too: to the caller, that note does not exist.
create or replace function ragpg_unresolved_links(p_vault text)
returns table (source_path text, line integer, kind text, target_text text, anchor_text text)
language plpgsql stable
set search_path = public, pg_catalog, pg_temp
as $$
begin
    perform ragpg_check_vault_names(array[p_vault]);
    return query
    select s.source_path, l.line, l.kind, l.target_text, l.anchor_text
    from links l
    join vaults v on v.id = l.vault_id
    join documents s on s.id = l.source_document_id
    where v.name = p_vault and not l.target_is_file
      and not exists (select 1 from link_targets r join documents t on t.id = r.target_document_id
                      where r.vault_id = l.vault_id and r.link_id = l.id and r.level = (select ragpg_caller_level()))
    order by l.target_text, s.source_path, l.line;
end
$$;

-- The notes linked with one in either direction, each once, with how: 'links here' (with the words
-- of the first such link) and/or 'linked from here'. Self-links are left out.
create or replace function ragpg_linked_notes(p_vault text, p_path text)
returns table (path text, title text, links_here boolean, linked_from_here boolean, anchor_text text)
language sql stable
set search_path = public, pg_catalog, pg_temp
begin atomic
    with note as (select ragpg_note_id(p_vault, p_path) as id),
    edges as (  -- the caller's links, each with its target at the caller's level
        select l.source_document_id as other, true as here, false as there, l.anchor_text, l.line
        from link_targets r join links l on l.vault_id = r.vault_id and l.id = r.link_id, note
        where r.target_document_id = note.id and r.level = (select ragpg_caller_level())
          and l.source_document_id <> note.id
        union all
        select r.target_document_id, false, true, l.anchor_text, l.line
        from links l join link_targets r on r.vault_id = l.vault_id and r.link_id = l.id, note
        where l.source_document_id = note.id and r.level = (select ragpg_caller_level())
          and r.target_document_id <> note.id
    )
    select d.source_path, d.title, bool_or(e.here), bool_or(e.there),
           (array_agg(e.anchor_text order by not e.here, e.line))[1]
    from edges e join documents d on d.id = e.other
    group by d.source_path, d.title
    order by bool_or(e.here) and bool_or(e.there) desc, count(*) desc, d.source_path;
end;

-- Notes close in meaning to one: the notes whose passages come nearest the mean of its passages'
-- vectors for `p_model` ('provider/model'; null: the one registered model). `similarity` is cosine
-- similarity (higher is better), of the other note's nearest passage.
create or replace function ragpg_similar_notes(p_vault text, p_path text, p_match_count integer default 10,
                                               p_model text default null)
returns table (path text, title text, similarity float8)
language plpgsql stable
set search_path = public, pg_catalog, pg_temp
as $$
declare
    v_note bigint := ragpg_note_id(p_vault, p_path);
    v_table text;
begin
    perform ragpg_check_match_count(p_match_count, 'p_match_count');
    if p_model is null and not exists (select from embedding_models) then
        return;  -- nothing embedded yet: no note is close in meaning
    end if;
    select m.embedding_table into v_table from embedding_models m
    where p_model is null or m.provider || '/' || m.model = p_model;
    if v_table is null or (p_model is null and (select count(*) from embedding_models) > 1) then
        raise exception using errcode = '22023', message = format(
            'name one embedding model (%s)', coalesce((select string_agg(m.provider || '/' || m.model, ', ')
                                                       from embedding_models m), 'none registered'));
    end if;
    return query execute format(
        'with centre as (
             select avg(e.embedding) as v from %1$I e join chunks c on c.id = e.chunk_id where c.document_id = $1
         ),
         near as (
             select c.document_id, 1 - (e.embedding <=> centre.v) as similarity
             from %1$I e join chunks c on c.id = e.chunk_id, centre
             where c.vault_id = (select vault_id from documents where id = $1) and c.document_id <> $1
               and centre.v is not null and vector_norm(centre.v) > 0
             order by e.embedding <=> centre.v
             limit $2 * 8  -- a note has several passages near the centre: enough for $2 distinct notes
         )
         select d.source_path, d.title, max(n.similarity)::float8
         from near n join documents d on d.id = n.document_id
         group by d.source_path, d.title
         order by 3 desc, 1
         limit $2', v_table)
        using v_note, p_match_count;
end
$$;

-- The notes related to one: linked either way (those linked both ways first, then by how often), then
-- the closest in meaning; each once, with what relates it. At most `p_match_count` rows.
create or replace function ragpg_related_notes(p_vault text, p_path text, p_match_count integer default 10,
                                               p_model text default null)
returns table (path text, title text, links_here boolean, linked_from_here boolean, anchor_text text,
               similarity float8)
language sql stable
set search_path = public, pg_catalog, pg_temp
begin atomic
    with linked as (
        select l.*, row_number() over () as rank from ragpg_linked_notes(p_vault, p_path) l
    ),
    nearby as (
        select s.*, row_number() over () as rank from ragpg_similar_notes(p_vault, p_path, p_match_count, p_model) s
    )
    select coalesce(l.path, s.path), coalesce(l.title, s.title), coalesce(l.links_here, false),
           coalesce(l.linked_from_here, false), l.anchor_text, s.similarity
    from linked l full join nearby s on s.path = l.path
    order by l.rank nulls last, s.rank
    limit p_match_count;
end;
