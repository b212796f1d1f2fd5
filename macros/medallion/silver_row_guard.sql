{#- What assert_silver_new_rows_valid checks, guarded in silver's write: a row without an
    event_id or a gamer_id, of an unknown event type or of another game stops the build and
    nothing of the batch is written. The expectations' drop rules and the inner join to the seed
    keep such rows out, so the guard fires only when a rule has been relaxed, and stops the
    write before the row lands rather than the check after (doc/DESIGN.md, "Silver's rows").
    One filter on the batch's new rows, in the statement's own job. -#}
{% macro gamelake_silver_row_guard(game_slug) -%}
    {{- assert_game_slug(game_slug) -}}
    {%- set table = 'silver_' ~ game_slug -%}
    {%- set fix = 'keep its expectation a drop or fail rule (macros/medallion/gamelake_expectations.sql)' -%}
    {%- set guards = [
        ('event_id is not null', 'a row without its event_id'),
        ('gamer_id is not null', 'a row without its gamer_id'),
        ("event_type in ('" ~ gamelake_event_types() | join("', '") ~ "')", 'a row of an unknown event_type'),
        ("game_slug = '" ~ game_slug ~ "'", 'a row of another game'),
    ] -%}
    {%- for condition, found in guards %}
    assert_true(coalesce({{ condition }}, false), '{{ table }}: {{ found }}; {{ fix }}') is null
    {%- if not loop.last %}
    and{% endif %}
    {%- endfor %}
{%- endmacro %}
