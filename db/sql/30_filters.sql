-- Metadata filters: a `filter jsonb` compiled into parts the match functions apply.
--
--   select * from ragpg_compile_filter('{"doc_type": "note", "date": {"$gte": "2024-01-01"}}');
--     containment | {"doc_type": "note"}             -- applied as metadata @> containment (GIN index)
--     predicate   | ($."date" >= $v0)                -- applied as jsonb_path_match(metadata, predicate, vars)
--     vars        | {"v0": "2024-01-01"}             -- every user value travels as a jsonpath variable
--     vaults      |                                  -- names from a top-level "vault" key (null = all vaults)
--
-- Semantics (see docs/sql-console.md):
--   * plain keys are JSONB containment: {"doc_type": "note"}, {"tags": ["a", "b"]} (has a and b);
--   * operator form under a key: $eq $ne $in $nin $gt $gte $lt $lte $prefix $exists $any $all;
--     on array fields comparisons hold when any element satisfies them ({"tags": {"$eq": "a"}});
--     $ne / $nin also match rows where the key is absent (they are the negations of $eq / $in);
--     ranges compare numbers with numbers and strings with strings (ISO dates sort as strings);
--   * $and / $or take arrays of filter objects; nested objects address nested keys;
--   * a top-level "vault" (a name, a list of names, or {"$in": [...]}) restricts by vault name; the
--     match functions reject a name that is not a vault (SQLSTATE 42704, `unknown vault 'x' (known: ...)`).
-- Invalid shapes raise SQLSTATE 22023 with a one-line message starting `invalid filter:`.
-- Keys appear in the jsonpath only as double-quoted member names with `\` and `"` escaped.
-- (create or replace: when a signature changes, add `drop function if exists <old signature>;` first.)

-- A jsonpath member accessor for any key: "…" with backslash and double quote escaped.
create or replace function ragpg_jsonpath_key(p_key text) returns text
language sql immutable parallel safe strict
set search_path = pg_catalog, pg_temp
return '"' || replace(replace(p_key, '\', '\\'), '"', '\"') || '"';

-- A user-supplied key or operator as it appears in an error message: JSON-quoted, one line, bounded.
-- Beyond JSON's own escapes, C1 controls and the Unicode line/paragraph separators are escaped too:
-- they end a line or steer a terminal as well.
create or replace function ragpg_filter_label(p_text text) returns text
language sql immutable parallel safe strict
set search_path = pg_catalog, pg_temp
return (
    select string_agg(case when c ~ '[\x7f-\x9f\u2028\u2029]' then '\u' || lpad(to_hex(ascii(c)), 4, '0') else c end,
                      '' order by i)
    from regexp_split_to_table(
             to_json(case when length(p_text) > 60 then left(p_text, 57) || '...' else p_text end)::text, '')
         with ordinality as t(c, i));

-- A vault name as error messages show it: 'name', or JSON-quoted, escaped and bounded (the filter
-- label) when it holds a character that ends a line, steers a terminal or breaks the quoting, or is
-- long. The Python side (rag.store.vaults.vault_label) agrees, so every door words it the same way.
create or replace function ragpg_vault_label(p_name text) returns text
language sql immutable parallel safe strict
set search_path = public, pg_catalog, pg_temp
as $$  -- (a string body: it calls another ragpg function)
    select case when length(p_name) <= 60 and p_name !~ '[\x01-\x1f\x7f-\x9f\u2028\u2029''\\]'
                then quote_literal(p_name) else ragpg_filter_label(p_name) end
$$;

create or replace function ragpg_invalid_filter(p_message text) returns void
language plpgsql immutable parallel safe
set search_path = pg_catalog, pg_temp
as $$
begin
    raise exception using errcode = '22023', message = 'invalid filter: ' || p_message;
end
$$;

-- True when any object inside `p_value` (at any depth, through arrays) has a key starting with `$`.
create or replace function ragpg_filter_has_operators(p_value jsonb) returns boolean
language sql immutable parallel safe strict
set search_path = pg_catalog, pg_temp
return jsonb_path_exists(p_value, 'lax $.** ? (@.type() == "object").keyvalue() ? (@.key starts with "$")');

-- Adds a value to the jsonpath variables; returns (name, vars). Names are v0, v1, ...; other keys
-- (folder_prefix, below) are not jsonpath variables and do not count.
create or replace function ragpg_filter_add_var(p_vars jsonb, p_value jsonb, out name text, out vars jsonb)
language sql immutable parallel safe
set search_path = pg_catalog, pg_temp
begin atomic
    select n, p_vars || jsonb_build_object(n, p_value)
    from (select 'v' || (select count(*) from jsonb_object_keys(p_vars) k where k ~ '^v[0-9]+$') as n) s;
end;

-- Names from a top-level "vault" key: "a", ["a", "b"], {"$eq": "a"} or {"$in": ["a", "b"]}.
create or replace function ragpg_filter_vault_names(p_value jsonb) returns text[]
language plpgsql immutable parallel safe
set search_path = public, pg_catalog, pg_temp
as $$
declare
    v_arg jsonb := p_value;
begin
    if jsonb_typeof(p_value) = 'object' then
        if (select count(*) from jsonb_object_keys(p_value)) = 1 and p_value ? '$eq' then
            v_arg := p_value -> '$eq';
        elsif (select count(*) from jsonb_object_keys(p_value)) = 1 and p_value ? '$in' then
            v_arg := p_value -> '$in';
            if jsonb_typeof(v_arg) <> 'array' then
                perform ragpg_invalid_filter('"vault": $in needs an array of vault names');
            end if;
        else
            perform ragpg_invalid_filter('"vault" takes a vault name, a list of names, {"$eq": name} or {"$in": [names]}');
        end if;
    end if;
    if jsonb_typeof(v_arg) = 'string' then
        return array[v_arg #>> '{}'];
    end if;
    if jsonb_typeof(v_arg) = 'array'
       and not exists (select 1 from jsonb_array_elements(v_arg) e where jsonb_typeof(e) <> 'string') then
        return array(select e from jsonb_array_elements_text(v_arg) e);
    end if;
    perform ragpg_invalid_filter('"vault" takes a vault name, a list of names, {"$eq": name} or {"$in": [names]}');
    return null;
end
$$;

-- The ids of the vaults a search reads: the named ones (those the caller may see), or every vault
-- when none is named. One rule for every function that turns a filter's vault names into the ids
-- its plans prune partitions by.
create or replace function ragpg_vault_ids(p_names text[]) returns bigint[]
language sql stable parallel safe
set search_path = public, pg_catalog, pg_temp
as $$  -- (a string body: the migrations' downgrade drops functions and tables in its own order)
    select array(select v.id from vaults v where p_names is null or v.name = any(p_names))
$$;

-- Raises 42704 (undefined_object) naming the first vault in `p_names` that does not exist, so a
-- typo in {"vault": ...} is an error at the console rather than an empty result. Null: no check.
create or replace function ragpg_check_vault_names(p_names text[]) returns void
language plpgsql stable parallel safe
set search_path = public, pg_catalog, pg_temp
as $$
declare
    v_missing text;
begin
    if p_names is null then
        return;
    end if;
    select u.n into v_missing
    from unnest(p_names) with ordinality as u(n, i)
    where not exists (select 1 from vaults v where v.name = u.n)
    order by u.i
    limit 1;
    if v_missing is not null then
        raise exception using errcode = '42704',
            message = format('unknown vault %s (known: %s)', ragpg_vault_label(v_missing),
                             coalesce((select string_agg(v.name, ', ' order by v.name) from vaults v), 'none'));
    end if;
end
$$;

-- The operator object under one key, e.g. {"$gte": "2024-01-01", "$lt": "2025-01-01"}.
create or replace function ragpg_filter_compile_ops(p_ops jsonb, p_path text, p_label text, p_vars jsonb,
                                         out expr text, out vars jsonb)
language plpgsql immutable parallel safe
set search_path = public, pg_catalog, pg_temp
as $$
declare
    v_op text;
    v_arg jsonb;
    v_type text;
    v_var record;
    v_elem jsonb;
    v_parts text[] := '{}';
    v_sub text[];
    v_test text;
    v_where text := ' for ' || ragpg_filter_label(p_label);
begin
    vars := p_vars;
    for v_op, v_arg in select key, value from jsonb_each(p_ops) loop
        v_type := jsonb_typeof(v_arg);
        if v_op in ('$eq', '$ne') then
            if v_type not in ('string', 'number', 'boolean', 'null') then
                perform ragpg_invalid_filter(v_op || v_where || ' needs a string, number, boolean or null, got ' || v_type);
            end if;
            select * into v_var from ragpg_filter_add_var(vars, v_arg);
            vars := v_var.vars;
            v_test := '(' || p_path || ' == $' || v_var.name || ')';
            v_parts := v_parts || case when v_op = '$eq' then v_test
                                       else '(!' || v_test || ' || ' || v_test || ' is unknown)' end;
        elsif v_op in ('$in', '$nin', '$any', '$all') then
            if v_type <> 'array' then
                perform ragpg_invalid_filter(v_op || v_where || ' needs an array, got ' || v_type);
            end if;
            if exists (select 1 from jsonb_array_elements(v_arg) e where jsonb_typeof(e) in ('object', 'array')) then
                perform ragpg_invalid_filter(v_op || v_where || ' takes an array of strings, numbers, booleans or nulls');
            end if;
            if v_op = '$all' then
                v_sub := '{}';
                for v_elem in select e from jsonb_array_elements(v_arg) e loop
                    select * into v_var from ragpg_filter_add_var(vars, v_elem);
                    vars := v_var.vars;
                    v_sub := v_sub || ('(' || p_path || ' == $' || v_var.name || ')');
                end loop;
                -- all of nothing holds
                v_parts := v_parts || coalesce('(' || array_to_string(nullif(v_sub, '{}'), ' && ') || ')',
                                               'exists($)');
            elsif jsonb_array_length(v_arg) = 0 then
                -- in nothing never holds; not in nothing always does
                v_parts := v_parts || case when v_op = '$nin' then 'exists($)' else '(!exists($))' end;
            else
                select * into v_var from ragpg_filter_add_var(vars, v_arg);
                vars := v_var.vars;
                v_test := '(' || p_path || ' == $' || v_var.name || '[*])';
                v_parts := v_parts || case when v_op = '$nin' then '(!' || v_test || ' || ' || v_test || ' is unknown)'
                                           else v_test end;
            end if;
        elsif v_op in ('$gt', '$gte', '$lt', '$lte') then
            if v_type not in ('string', 'number') then
                perform ragpg_invalid_filter(v_op || v_where || ' needs a string or a number, got ' || v_type);
            end if;
            select * into v_var from ragpg_filter_add_var(vars, v_arg);
            vars := v_var.vars;
            v_parts := v_parts || ('(' || p_path
                                   || case v_op when '$gt' then ' > ' when '$gte' then ' >= '
                                                when '$lt' then ' < ' else ' <= ' end
                                   || '$' || v_var.name || ')');
        elsif v_op = '$prefix' then
            if v_type <> 'string' then
                perform ragpg_invalid_filter('$prefix' || v_where || ' needs a string, got ' || v_type);
            end if;
            select * into v_var from ragpg_filter_add_var(vars, v_arg);
            vars := v_var.vars;
            v_parts := v_parts || ('(' || p_path || ' starts with $' || v_var.name || ')');
        elsif v_op = '$exists' then
            if v_type <> 'boolean' then
                perform ragpg_invalid_filter('$exists' || v_where || ' needs true or false, got ' || v_type);
            end if;
            v_parts := v_parts || case when v_arg = 'true'::jsonb then 'exists(' || p_path || ')'
                                       else '(!exists(' || p_path || '))' end;
        elsif v_op in ('$and', '$or') then
            perform ragpg_invalid_filter(v_op || v_where
                                         || ': $and/$or combine filter objects and belong at the top level or inside $and/$or');
        else
            perform ragpg_invalid_filter('unknown operator ' || ragpg_filter_label(v_op) || v_where
                                         || ' (known: $eq $ne $in $nin $gt $gte $lt $lte $prefix $exists $any $all)');
        end if;
    end loop;
    expr := '(' || array_to_string(v_parts, ' && ') || ')';
end
$$;

-- The value under one key, anywhere a jsonpath is needed (operators, nested keys, or a literal that
-- must behave like containment: a scalar equals a non-array value; an array holds every element).
create or replace function ragpg_filter_compile_field(p_value jsonb, p_path text, p_label text, p_depth integer, p_vars jsonb,
                                           out expr text, out vars jsonb)
language plpgsql immutable parallel safe
set search_path = public, pg_catalog, pg_temp
as $$
declare
    v_type text := jsonb_typeof(p_value);
    v_keys integer;
    v_ops integer;
    v_key text;
    v_val jsonb;
    v_part record;
    v_var record;
    v_parts text[] := '{}';
begin
    vars := p_vars;
    if p_depth > 8 then
        perform ragpg_invalid_filter('nested deeper than 8 levels');
    end if;
    if v_type = 'object' then
        select count(*), count(*) filter (where left(k, 1) = '$') into v_keys, v_ops
        from jsonb_object_keys(p_value) k;
        if v_keys = 0 then
            expr := '(' || p_path || '.type() == "object")';
        elsif v_ops = v_keys then
            select * into v_part from ragpg_filter_compile_ops(p_value, p_path, p_label, vars);
            expr := v_part.expr;
            vars := v_part.vars;
        elsif v_ops = 0 then
            for v_key, v_val in select key, value from jsonb_each(p_value) loop
                select * into v_part
                from ragpg_filter_compile_field(v_val, p_path || '.' || ragpg_jsonpath_key(v_key),
                                                p_label || '.' || v_key, p_depth + 1, vars);
                vars := v_part.vars;
                v_parts := v_parts || v_part.expr;
            end loop;
            expr := '(' || array_to_string(v_parts, ' && ') || ')';
        else
            perform ragpg_invalid_filter('cannot mix operators and field names under ' || ragpg_filter_label(p_label));
        end if;
    elsif v_type = 'array' then
        if exists (select 1 from jsonb_array_elements(p_value) e where jsonb_typeof(e) in ('object', 'array')) then
            perform ragpg_invalid_filter('a list of objects or lists under ' || ragpg_filter_label(p_label)
                                         || ' can only be matched as top-level containment');
        end if;
        v_parts := array['(' || p_path || '.type() == "array")'];
        for v_val in select e from jsonb_array_elements(p_value) e loop
            select * into v_var from ragpg_filter_add_var(vars, v_val);
            vars := v_var.vars;
            v_parts := v_parts || ('(' || p_path || ' == $' || v_var.name || ')');
        end loop;
        expr := '(' || array_to_string(v_parts, ' && ') || ')';
    else
        select * into v_var from ragpg_filter_add_var(vars, p_value);
        vars := v_var.vars;
        expr := '((' || p_path || ' == $' || v_var.name || ') && !(' || p_path || '.type() == "array"))';
    end if;
end
$$;

-- One filter object: the root (p_top) or an element of $and / $or.
create or replace function ragpg_filter_compile_object(p_filter jsonb, p_depth integer, p_vars jsonb, p_top boolean,
                                            out expr text, out vars jsonb, out containment jsonb, out vaults text[])
language plpgsql immutable parallel safe
set search_path = public, pg_catalog, pg_temp
as $$
declare
    v_key text;
    v_val jsonb;
    v_part record;
    v_parts text[] := '{}';
    v_sub text[];
    v_elem jsonb;
begin
    vars := p_vars;
    containment := '{}';
    if p_depth > 8 then
        perform ragpg_invalid_filter('nested deeper than 8 levels');
    end if;
    if jsonb_typeof(p_filter) <> 'object' then
        perform ragpg_invalid_filter('expected a JSON object, got ' || jsonb_typeof(p_filter));
    end if;
    for v_key, v_val in select key, value from jsonb_each(p_filter) loop
        if v_key in ('$and', '$or') then
            if jsonb_typeof(v_val) <> 'array' then
                perform ragpg_invalid_filter(v_key || ' needs an array of filter objects, got ' || jsonb_typeof(v_val));
            end if;
            v_sub := '{}';
            for v_elem in select e from jsonb_array_elements(v_val) e loop
                if jsonb_typeof(v_elem) <> 'object' then
                    perform ragpg_invalid_filter(v_key || ' needs an array of filter objects, got an element of type '
                                                 || jsonb_typeof(v_elem));
                end if;
                select * into v_part from ragpg_filter_compile_object(v_elem, p_depth + 1, vars, false);
                vars := v_part.vars;
                v_sub := v_sub || coalesce(v_part.expr, 'exists($)');
            end loop;
            if cardinality(v_sub) = 0 then
                v_parts := v_parts || case when v_key = '$and' then 'exists($)' else '(!exists($))' end;
            else
                v_parts := v_parts || ('(' || array_to_string(v_sub, case when v_key = '$and' then ' && ' else ' || ' end) || ')');
            end if;
        elsif left(v_key, 1) = '$' then
            perform ragpg_invalid_filter('unknown operator ' || ragpg_filter_label(v_key)
                                         || ' at the top of a filter object (known there: $and $or)');
        elsif p_top and v_key = 'vault' then
            vaults := ragpg_filter_vault_names(v_val);
        elsif p_top and not ragpg_filter_has_operators(v_val) then
            containment := containment || jsonb_build_object(v_key, v_val);
        else
            select * into v_part
            from ragpg_filter_compile_field(v_val, '$.' || ragpg_jsonpath_key(v_key), v_key, p_depth + 1, vars);
            vars := v_part.vars;
            v_parts := v_parts || v_part.expr;
            -- A folder prefix or a date bound at the top level holds for every matching row:
            -- ragpg_filter_sql adds it as an indexed condition beside the predicate (which stays
            -- the rule). String bounds only: jsonpath compares strings by code point, as collate "C".
            if p_top and v_key = 'folder' and jsonb_typeof(v_val -> '$prefix') = 'string' then
                vars := vars || jsonb_strip_nulls(jsonb_build_object(
                    'folder_prefix', v_val -> '$prefix',
                    'folder_prefix_end', ragpg_text_prefix_end(v_val ->> '$prefix')));
            end if;
            if p_top and v_key = 'date' and jsonb_typeof(v_val) = 'object' then
                vars := vars || jsonb_strip_nulls(jsonb_build_object(
                    'date_from', (select e.value from jsonb_each(v_val) e
                                  where e.key in ('$gte', '$gt', '$eq') and jsonb_typeof(e.value) = 'string'
                                  order by e.value desc limit 1),
                    'date_to', (select e.value from jsonb_each(v_val) e
                                where e.key in ('$lte', '$lt', '$eq') and jsonb_typeof(e.value) = 'string'
                                order by e.value limit 1)));
            end if;
        end if;
    end loop;
    if cardinality(v_parts) > 0 then
        expr := array_to_string(v_parts, ' && ');
    end if;
end
$$;

-- The public entry point. A SQL NULL filter is the empty filter.
create or replace function ragpg_compile_filter(filter jsonb,
                                     out containment jsonb, out predicate jsonpath, out vars jsonb, out vaults text[])
language plpgsql immutable parallel safe
set search_path = public, pg_catalog, pg_temp
as $$
declare
    v_part record;
begin
    containment := '{}';
    vars := '{}';
    if filter is null or filter = '{}'::jsonb then
        return;
    end if;
    if jsonb_typeof(filter) <> 'object' then
        perform ragpg_invalid_filter('expected a JSON object, got ' || jsonb_typeof(filter));
    end if;
    if octet_length(filter::text) > 65536 then
        perform ragpg_invalid_filter('larger than 64 kB');
    end if;
    -- Just a vault restriction (what compute_context sends): no predicate to build.
    if filter ? 'vault' and (select count(*) from jsonb_object_keys(filter)) = 1 then
        vaults := ragpg_filter_vault_names(filter -> 'vault');
        return;
    end if;
    select * into v_part from ragpg_filter_compile_object(filter, 1, '{}', true);
    containment := v_part.containment;
    vars := v_part.vars;
    vaults := v_part.vaults;
    if v_part.expr is not null then
        predicate := v_part.expr::jsonpath;
    end if;
end
$$;

-- The least string above every string that starts with p_prefix, in byte order (text_pattern_ops):
-- the prefix with its last character replaced by the next code point (UTF-8 bytes sort as code
-- points do). Null when there is none (an empty prefix, only U+10FFFF) or the database encoding is
-- not UTF-8: the range then has no upper end, still holding every string with the prefix.
create or replace function ragpg_text_prefix_end(p_prefix text) returns text
language plpgsql immutable parallel safe strict
set search_path = pg_catalog, pg_temp
as $$
declare
    v_n integer := length(p_prefix);
    v_code integer;
begin
    if getdatabaseencoding() <> 'UTF8' then
        return null;
    end if;
    while v_n > 0 loop
        v_code := ascii(substr(p_prefix, v_n, 1));
        if v_code < 1114111 then
            v_code := case when v_code + 1 between 55296 and 57343 then 57344 else v_code + 1 end;  -- past surrogates
            return substr(p_prefix, 1, v_n - 1) || chr(v_code);
        end if;
        v_n := v_n - 1;
    end loop;
    return null;
end
$$;

-- The WHERE fragment applying a compiled filter's containment and predicate to `<alias>.<column>`,
-- for dynamic queries that pass containment, predicate and vars as parameters $n, $n+1, $n+2.
-- Only fixed text, identifiers (%I) and parameter numbers go into it: no user value.
--
-- With a predicate it also states the top-level folder prefix (vars ->> 'folder_prefix', set by
-- the compiler) as the byte range [prefix, folder_prefix_end) that chunks_folder_idx
-- (text_pattern_ops) reads: jsonb_path_match alone reads every row's metadata. The range, not
-- `^@ prefix`: the planner turns ^@ into that range but still tests ^@ on every row it finds (1M
-- chunks, a 10 % folder of 13k chunks: 2-2.5 ms of a 15 ms listing). The jsonpath also
-- matches a folder that is an array with an element having the prefix, hence the `array` arm
-- (chunks_folder_array_idx, normally empty). Both arms are implied by the predicate, which still
-- applies: same rows, found through the index. Top-level string bounds on `date` (date_from,
-- date_to) work the same way through chunks_date_idx (collate "C") and chunks_date_array_idx.
-- EXECUTE ... USING plans with the parameter values, so a bound that is absent folds
-- `(... is null)` to true and its condition disappears.
create or replace function ragpg_filter_sql(p_alias text, p_column text, p_containment jsonb, p_predicate jsonpath,
                                 p_first_param integer)
returns text
language sql immutable parallel safe
set search_path = pg_catalog, pg_temp
return concat(
    case when p_containment is not null and p_containment <> '{}'::jsonb
         then format(' and %I.%I @> $%s', p_alias, p_column, p_first_param) end,
    case when p_predicate is not null
         then format(' and jsonb_path_match(%I.%I, $%s, $%s)', p_alias, p_column, p_first_param + 1, p_first_param + 2)
              || format(' and ((%1$I.%2$I ->> ''folder'') ~>=~ ($%3$s ->> ''folder_prefix'')'
                        ' and ((%1$I.%2$I ->> ''folder'') ~<~ ($%3$s ->> ''folder_prefix_end'')'
                        ' or ($%3$s ->> ''folder_prefix_end'') is null)'
                        ' or ($%3$s ->> ''folder_prefix'') is null'
                        ' or jsonb_typeof(%1$I.%2$I -> ''folder'') = ''array'')'
                        ' and ((%1$I.%2$I ->> ''date'') collate "C" >= ($%3$s ->> ''date_from'')'
                        ' or ($%3$s ->> ''date_from'') is null'
                        ' or jsonb_typeof(%1$I.%2$I -> ''date'') = ''array'')'
                        ' and ((%1$I.%2$I ->> ''date'') collate "C" <= ($%3$s ->> ''date_to'')'
                        ' or ($%3$s ->> ''date_to'') is null'
                        ' or jsonb_typeof(%1$I.%2$I -> ''date'') = ''array'')',
                        p_alias, p_column, p_first_param + 2)
    end);

-- Convenience for the console: does this metadata satisfy the filter?
--   select source_path from chunks where ragpg_filter_match(metadata, '{"tags": {"$any": ["x"]}}');
-- (The match_* functions compile the filter once per call instead of once per row.)
create or replace function ragpg_filter_match(metadata jsonb, filter jsonb) returns boolean
language plpgsql immutable parallel safe
set search_path = public, pg_catalog, pg_temp
as $$
declare
    f record;
begin
    select * into f from ragpg_compile_filter(filter);
    return coalesce(metadata @> f.containment, false)
       and (f.predicate is null or coalesce(jsonb_path_match(metadata, f.predicate, f.vars), false))
       and (f.vaults is null or coalesce(metadata ->> 'vault' = any(f.vaults), false));
end
$$;
