-- The bronze rows new since the silver readers' oldest fresh mark: macros/medallion/bronze_slice.sql
-- Checkpoints and log hours as silver's and gold's (dbt_project.yml; ingest/ops/lakehouse_checkpoints.py).
-- File statistics for bronze_version alone: its readers prune by game_slug's partition and find
-- the bounds row by bronze_version's null count; statistics on all 30 columns cost about a
-- sixth of the slice's write (0.83x without them: bench/results/slice_write.md).
{{ config(
    materialized='table',
    partition_by=['game_slug'],
    tblproperties={
        'delta.checkpointInterval': '1000',
        'delta.logRetentionDuration': 'interval 6 hours',
        'delta.deletedFileRetentionDuration': 'interval 6 hours',
        'delta.dataSkippingStatsColumns': 'bronze_version',
    },
) }}
{{ bronze_slice() }}  -- noqa: RF06
