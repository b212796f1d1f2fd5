{#- The table properties of a gold table: the checkpoint interval and log hours silver's have
    (dbt_project.yml; ingest/ops/lakehouse_checkpoints.py), and Delta's file statistics on
    `columns` alone, the ones the table's readers skip by (ingest/ops/stats_columns.py says which
    and why). Each gold macro sets them whole: dbt replaces a folder's tblproperties with a
    model's own rather than merging them, and gold's two kinds keep statistics on different
    columns. -#}
{% macro gamelake_gold_table_properties(columns) %}
    {{ return({
        'delta.checkpointInterval': '1000',
        'delta.logRetentionDuration': 'interval 6 hours',
        'delta.deletedFileRetentionDuration': 'interval 6 hours',
        'delta.dataSkippingStatsColumns': columns | join(','),
    }) }}
{% endmacro %}
