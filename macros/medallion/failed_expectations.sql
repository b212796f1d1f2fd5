{#- An array<string> expression: the names of the given rules a row breaks.
    A rule whose condition is null (unknown) counts as broken. -#}
{% macro failed_expectations(rules) %}
    {%- if rules | length == 0 -%}
        cast(array() as array<string>)
    {%- else -%}
        filter(
            array(
                {%- for rule in rules %}
                case when not coalesce({{ rule.condition }}, false) then '{{ rule.name }}' end
                {%- if not loop.last %},{% endif %}
                {%- endfor %}
            ),
            rule_name -> rule_name is not null
        )
    {%- endif -%}
{% endmacro %}
