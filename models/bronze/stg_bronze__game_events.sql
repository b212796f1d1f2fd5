-- Bronze columns of schema versions newer than this project pass through backtick-quoted
-- (RF06): their names come from data, so they are quoted whether or not they need it.
{{ stage_bronze_events(source('bronze', 'game_events')) }}  -- noqa: RF06
