-- The games seed lists the games: fail the build when seeds/games.csv and the
-- generated per-game models disagree (a row added or removed without
-- `ingest games sync`). Each returned row names the game and the fix.
{{ games_seed_mismatches() }}
