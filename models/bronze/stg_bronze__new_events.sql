-- The bronze rows new since the silver readers' oldest fresh mark: macros/medallion/bronze_slice.sql
-- Checkpoints as silver's and gold's (dbt_project.yml; ingest/ops/lakehouse_checkpoints.py)
{{ config(
    materialized='table',
    partition_by=['game_slug'],
    tblproperties={'delta.checkpointInterval': '1000'},
) }}
{{ bronze_slice() }}  -- noqa: RF06
