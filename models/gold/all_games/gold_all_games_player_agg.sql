{{ union_games('player_agg', key_columns=['unioned.game_slug', 'unioned.gamer_id']) }}
