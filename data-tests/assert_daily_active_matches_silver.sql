{{ config(tags=["audit"]) }}
-- Incremental daily_active must equal a recount from silver: the distinct players a build adds
-- to a day may never drift. Returns the days whose stored row differs.
{{ daily_active_drift() }}
