{{ quarantine_events() }}  -- noqa: RF06
