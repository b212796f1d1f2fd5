{{ config(tags=["audit"]) }}
-- Incremental gold must equal a recomputation from silver: merged counts,
-- mins and maxes may never drift. Returns the gamers whose stored row differs.
{{ player_agg_drift() }}
