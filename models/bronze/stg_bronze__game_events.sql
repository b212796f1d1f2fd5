{{ stage_bronze_events(source('bronze', 'game_events')) }}
