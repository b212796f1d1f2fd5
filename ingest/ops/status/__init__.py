"""``ingest status``: one health view across layers, Kafka -> bronze -> silver -> gold.

status_command.py wires it; kafka_offsets.py is the only part that talks to Kafka. report.py
assembles the rest from the Delta tables (landing_tables.py, layers.py, delta_commits.py) and
gives the JSON shape; anomalies.py judges it against the ``status_*`` settings; render.py
prints it.
"""
