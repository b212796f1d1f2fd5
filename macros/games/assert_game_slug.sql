{#- Compile-time guard for macros that put a game slug into SQL. The full check
    (reserved words, duplicates, the seed row) runs in `ingest games sync`;
    this one makes sure nothing unsafe reaches SQL even if a file was hand-edited. -#}
{% macro assert_game_slug(game_slug) %}
    {%- if game_slug is not string or not modules.re.fullmatch('[a-z][a-z0-9_]{0,39}', game_slug) -%}
        {{ exceptions.raise_compiler_error(
            "game slug '" ~ game_slug ~ "' is not a safe identifier ([a-z][a-z0-9_]{0,39}); "
            ~ "fix seeds/games.csv and run `ingest games sync`") }}
    {%- endif -%}
{% endmacro %}
