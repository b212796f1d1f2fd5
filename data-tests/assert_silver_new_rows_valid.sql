-- Every game's silver, once for all games: the rows of each table's latest build have a unique,
-- non-null event_id, a gamer_id, a known event_type and a game in the seed. Each row returned is
-- a failure naming the game and the check (macros/games/new_rows_checks.sql).
{{ silver_new_rows_failures() }}
