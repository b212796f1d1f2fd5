{#- dbt-spark's MERGE of an incremental model (spark__get_merge_sql, which this takes the place
    of and keeps: the unique key, incremental_predicates, merge_update_columns and
    merge_exclude_columns, `update set *` without them), with two kinds of column a model may
    name in its config: `gamelake_merge_adds`, whose source values are changes added to the
    stored ones (a new key stores them as they are), and `gamelake_merge_greatest`, which keep
    the larger value. gold_daily_active's counts add up: adding them in the MERGE, which reads
    the table to match its keys anyway, spares its source a second read of the table (0.3-0.4 s
    a build, bench/results/refresh_profile.md, stop 56). -#}
{% macro spark__get_merge_sql(target, source, unique_key, dest_columns, incremental_predicates) %}
    {{- return(gamelake_merge_sql(target, source, unique_key, incremental_predicates)) -}}
{% endmacro %}

{#- The MERGE statement; `evolve` lets Delta add the source's new columns in the same commit
    (the one-statement path of the incremental materialization, lean_incremental.sql). -#}
{% macro gamelake_merge_sql(target, source, unique_key, incremental_predicates, evolve=false) %}
    {%- set predicates = [] + (incremental_predicates or []) -%}
    {%- set keys = [unique_key] if unique_key is string else (unique_key or []) -%}
    {%- for key in keys -%}
        {%- do predicates.append('DBT_INTERNAL_SOURCE.' ~ key ~ ' = DBT_INTERNAL_DEST.' ~ key) -%}
    {%- endfor -%}
    {%- set updated = _merge_updated_columns(target) if gamelake_merge_lists_columns() else [] %}
    {{ config.get('sql_header') or '' }}
    merge {{ 'with schema evolution ' if evolve }}into {{ target }} as DBT_INTERNAL_DEST
        using {{ source }} as DBT_INTERNAL_SOURCE
        on {{ predicates | join(' and ') if predicates else 'false' }}
        when matched then update set
        {%- for column in updated %}
            {{ column }} = {{ _merged_value(column, config.get('gamelake_merge_adds') or [],
                config.get('gamelake_merge_greatest') or []) }}{{ ',' if not loop.last }}
        {%- else %} *
        {%- endfor %}
        when not matched then insert *
{% endmacro %}

{#- Whether the model's MERGE names the columns it updates (then it asks the table for them)
    rather than updating every column with `update set *`. -#}
{% macro gamelake_merge_lists_columns() %}
    {{ return([config.get('merge_update_columns'), config.get('merge_exclude_columns'),
        config.get('gamelake_merge_adds'), config.get('gamelake_merge_greatest')] | select | list | length > 0) }}
{% endmacro %}

{% macro _merge_updated_columns(target) %}
    {%- set dest_columns = adapter.get_columns_in_relation(target) -%}
    {%- set updated = get_merge_update_columns(config.get('merge_update_columns'),
        config.get('merge_exclude_columns'), dest_columns) or [] -%}
    {{ return(updated or dest_columns | map(attribute='name') | list) }}
{% endmacro %}

{% macro _merged_value(column, adds, greatest) %}
    {%- if column in adds -%}
        {{ return('coalesce(DBT_INTERNAL_DEST.' ~ column ~ ', 0) + DBT_INTERNAL_SOURCE.' ~ column) }}
    {%- elif column in greatest -%}
        {{ return('greatest(DBT_INTERNAL_DEST.' ~ column ~ ', DBT_INTERNAL_SOURCE.' ~ column ~ ')') }}
    {%- endif -%}
    {{ return('DBT_INTERNAL_SOURCE.' ~ column) }}
{% endmacro %}
