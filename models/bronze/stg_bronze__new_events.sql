-- The bronze rows new since the silver readers' oldest fresh mark: macros/medallion/bronze_slice.sql
{{ config(materialized='table', partition_by=['game_slug']) }}
{{ bronze_slice() }}  -- noqa: RF06
