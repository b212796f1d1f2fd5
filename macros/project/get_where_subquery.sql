{#- dbt's test relation with the `where` config applied, plus one gamelake value:
    where: gamelake_latest_build tests only the rows of the event_date partitions that the
    relation's latest insert wrote to (its change data feed for that one version), between that
    insert's earliest and latest event times. A duplicate event shares its event time, so a
    uniqueness test there still sees a new row that repeats an old one, and the cost follows the
    new data, not history. The audit (tag:audit) covers whole tables. -#}
{% macro get_where_subquery(relation) -%}
    {%- set where = config.get('where', '') -%}
    {%- if where == 'gamelake_latest_build' -%}
        {%- set where = _gamelake_latest_build_partitions(relation) -%}
    {%- endif -%}
    {%- if where -%}
        {%- set filtered -%}
            (select * from {{ relation }} where {{ where }}) dbt_subquery
        {%- endset -%}
        {{ return(filtered) }}
    {%- else -%}
        {{ return(relation) }}
    {%- endif -%}
{%- endmacro %}

{% macro _gamelake_latest_build_partitions(relation) %}
    {#- not built yet (a first build, or `dbt docs generate` before any): nothing to narrow -#}
    {%- if not execute or not gamelake_relation_exists(relation) -%}
        {{ return('true') }}
    {%- endif -%}
    {%- set recorded = _recorded_batch(relation) -%}
    {%- if recorded is not none -%}
        {{ return(gamelake_batch_rows(recorded.dates, recorded.event_at)) }}
    {%- endif -%}
    {#- the latest insert is among the last few commits: the refresh's upkeep (OPTIMIZE, and
        VACUUM's start and end) may follow it -#}
    {%- set writes = run_query("describe history " ~ relation ~ " limit 10")
        | selectattr('operation', 'in', ['WRITE', 'CREATE TABLE AS SELECT', 'CREATE OR REPLACE TABLE AS SELECT'])
        | list -%}
    {#- a WRITE by delta-rs is `ingest bronze migrate-native-types` rewriting every row with new
        column types, which a change feed read cannot cross: test the whole table then -#}
    {%- if writes | length == 0 or (writes[0]['engineInfo'] or '').startswith('delta-rs') -%}
        {{ return('true') }}  {#- not found: test the whole table -#}
    {%- endif -%}
    {#- Delta refuses a change feed read of a version older than the table's deleted-file
        retention (its files may be vacuumed): a `dbt test` hours after the last build tests the
        whole table -#}
    {%- if not _readable_as_of(relation, writes[0]['timestamp']) -%}
        {{ return('true') }}
    {%- endif -%}
    {%- set version = writes[0]['version'] | int -%}
    {%- set written = gamelake_batch_span(
        "table_changes('" ~ relation ~ "', " ~ version ~ ", " ~ version ~ ")", "true") -%}
    {{ return(gamelake_batch_rows(written.dates, written.event_at)) }}
{% endmacro %}

{#- Whether a commit of `relation` made at `committed` (Spark's session time zone) is still within
    the table's delta.deletedFileRetentionDuration (Delta's default a week), with ten minutes to
    spare, so a read of it is not refused while the check runs. Delta takes the value with or
    without `interval` and in several units ('6 hours', 'interval 1 day 2 hours'); a value read
    here in no such form counts as past it, so the table is checked whole rather than refused. -#}
{% macro _readable_as_of(relation, committed) %}
    {%- set key = 'delta.deletedFileRetentionDuration' -%}
    {%- set shown = run_query("show tblproperties " ~ relation ~ " ('" ~ key ~ "')") -%}
    {%- set retention = _retention_interval(shown.columns[1].values() | first) -%}
    {%- if retention is none -%}
        {{ return(false) }}
    {%- endif -%}
    {%- set fresh = run_query(
        "select timestamp'" ~ committed.strftime('%Y-%m-%d %H:%M:%S') ~ "' > current_timestamp() - "
        ~ retention ~ " + interval 10 minutes") -%}
    {{ return(fresh[0][0]) }}
{% endmacro %}

{#- A table's deletedFileRetentionDuration as a Spark interval literal: Delta's week when unset
    (show tblproperties then says the key is not set); none when it is in no form read here. -#}
{% macro _retention_interval(shown) %}
    {%- set value = (shown or '') | trim | lower -%}
    {%- if value == '' or 'does not have property' in value -%}
        {{ return('interval 1 week') }}
    {%- endif -%}
    {%- set value = modules.re.sub('^interval\\s+', '', modules.re.sub('\\s+', ' ', value)) -%}
    {%- set unit = '\\d+ (microsecond|millisecond|second|minute|hour|day|week)s?' -%}
    {%- if not modules.re.fullmatch(unit ~ '( ' ~ unit ~ ')*', value) -%}
        {{ return(none) }}
    {%- endif -%}
    {{ return('interval ' ~ value) }}
{% endmacro %}

{#- The dates and event times this invocation's build of `relation` recorded for its batch (a
    superset of the rows its insert wrote: _record_batch, macros/medallion/silver_game_events.sql);
    none when this invocation did not build it from the slice, or a build recorded them in another. -#}
{% macro _recorded_batch(relation) %}
    {%- set recorded = run_query("set " ~ _batch_dates_conf(relation))[0][1] or '' -%}
    {%- set built_here = ('model.' ~ project_name ~ '.' ~ relation.identifier) in selected_resources -%}
    {%- if not recorded.startswith(invocation_id ~ ':') and target.threads > 1 and built_here -%}
        {%- set recorded = _recorded_by_another_thread(relation) -%}
    {%- endif -%}
    {%- if not recorded.startswith(invocation_id ~ ':') -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set parts = recorded[invocation_id | length + 1:].split('/') -%}
    {%- set times = parts[1:] | map('replace', 'T', ' ') | list -%}
    {{ return({'dates': parts[0].split(',') if parts[0] else [], 'event_at': times or none}) }}
{% endmacro %}

{#- What a build on another dbt thread of this invocation, in a Spark session of its own,
    recorded for `relation` (_record_batch's global temporary view); '' when none did. Asked only
    for a relation this invocation builds, so gold's step and `dbt test` do not look. -#}
{% macro _recorded_by_another_thread(relation) %}
    {%- set database = run_query("set spark.sql.globalTempDatabase")[0][1] -%}
    {%- set view = _batch_view(relation) -%}
    {%- set found = run_query("show views in " ~ database ~ " like '" ~ view ~ "'")
        | selectattr('namespace', 'equalto', database) | list -%}
    {%- if found | length == 0 -%}
        {{ return('') }}
    {%- endif -%}
    {{ return(run_query("select recorded from " ~ database ~ "." ~ view)[0][0]) }}
{% endmacro %}
