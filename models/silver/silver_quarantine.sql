{{ quarantine_events() }}
