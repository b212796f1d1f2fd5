-- Every game's gold, once for all games: one row per player in player_agg and per day in
-- daily_active, keys not null, games in the seed. Each row returned is a failure naming the
-- game, the table and the check (macros/games/new_rows_checks.sql).
{{ gold_rows_failures() }}
