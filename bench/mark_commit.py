"""Where a bronze reader's mark can ride: what each way costs a model's build, and its read.

    python -m bench.mark_commit [--tables 5] [--rounds 8] [--rows 100]

A silver model commits its rows and must record the bronze version it has read up to (its
mark, macros/medallion/bronze_marks.sql). In one warm local Spark session with the project's
settings, on ``--tables`` small Delta tables shaped like silver (partitioned by event_date,
change data feed on), each round writes ``--rows`` rows to every table once per way, the ways
interleaved so the machine's drift hits them alike:

- ``insert + set tblproperties``: the rows, then the mark as a table property (a second commit);
- ``insert with userMetadata``: the mark in the data commit's ``commitInfo.userMetadata``, set
  by ``SET spark.databricks.delta.commitInfo.userMetadata`` before and ``RESET`` after;
- ``insert with userMetadata option``: the same metadata as the insert's own write option,
  ``insert into ... with ('userMetadata' = ...)``, which dbt threads sharing one session could
  not swap; and ``..., the insert reading its own table``: the same with an anti join on the
  table, as silver's insert has. Delta 4.4 drops the option from the second: its commit
  carries no userMetadata (the "mark recorded" column), so silver cannot use it;
- ``insert with txn``: the mark as the data commit's transaction action (``txnAppId`` and
  ``txnVersion`` session confs);
- ``insert alone``: the floor, no mark at all.

Reading a mark back is timed too: ``show tblproperties`` and ``describe history ... limit 20``
through Spark, and delta-rs reading the latest commits' ``userMetadata`` of every table (what
the continuous refresh does once per cycle). Medians per table are printed and appended to
bench/results/mark_commit.md with the machine and date.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from bench.results_file import append_section
from ingest.core.settings.paths import PROJECT_DIR

RESULTS = PROJECT_DIR / "bench" / "results" / "mark_commit.md"
USER_METADATA = "spark.databricks.delta.commitInfo.userMetadata"


def _session(warehouse: Path) -> Any:
    from ingest.core.spark.session import local_session

    session = local_session(warehouse)
    session.sparkContext.setLogLevel("ERROR")
    return session


def _rows(rows: int) -> str:
    return (
        f"select concat('ev-', uuid()) as event_id, concat('gamer-', id % 50) as gamer_id,"
        f" current_date() - cast(id % 3 as int) as event_date, current_timestamp() as silver_loaded_at"
        f" from range({rows})"
    )


def _ways(spark: Any, rows: int) -> dict[str, Callable[[str, int], None]]:
    insert = _rows(rows)

    def with_property(table: str, mark: int) -> None:
        spark.sql(f"insert into {table} {insert}")
        spark.sql(f"alter table {table} set tblproperties ('gamelake.bronze_version' = '{mark}')")

    def with_user_metadata(table: str, mark: int) -> None:
        metadata = json.dumps({"gamelake.reader": table, "gamelake.bronze_version": mark})
        spark.sql(f"set {USER_METADATA} = {metadata}")
        spark.sql(f"insert into {table} {insert}")
        spark.sql(f"reset {USER_METADATA}")

    def with_write_option(table: str, mark: int) -> None:
        metadata = json.dumps({"gamelake.reader": table, "gamelake.bronze_version": mark})
        spark.sql(f"insert into {table} with ('userMetadata' = '{metadata}') {insert}")

    def with_write_option_reading_itself(table: str, mark: int) -> None:
        metadata = json.dumps({"gamelake.reader": table, "gamelake.bronze_version": mark})
        spark.sql(
            f"insert into {table} with ('userMetadata' = '{metadata}')"
            f" select * from ({insert}) as batch left anti join {table} as held"
            " on batch.event_id = held.event_id and held.event_date >= current_date() - 2"
        )

    def with_txn(table: str, mark: int) -> None:
        spark.conf.set("spark.databricks.delta.write.txnAppId", f"gamelake:{table}")
        spark.conf.set("spark.databricks.delta.write.txnVersion", str(mark))
        spark.sql(f"insert into {table} {insert}")
        spark.conf.unset("spark.databricks.delta.write.txnAppId")
        spark.conf.unset("spark.databricks.delta.write.txnVersion")

    def alone(table: str, mark: int) -> None:
        spark.sql(f"insert into {table} {insert}")

    return {
        "insert + set tblproperties": with_property,
        "insert with userMetadata": with_user_metadata,
        "insert with userMetadata option": with_write_option,
        "insert with userMetadata option, the insert reading its own table": with_write_option_reading_itself,
        "insert with txn": with_txn,
        "insert alone": alone,
    }


def _timed(run: Callable[[], object]) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def _collect(spark: Any, sql: str) -> object:
    return spark.sql(sql).collect()


def _delta_rs_marks(paths: list[Path]) -> dict[str, Any]:
    from deltalake import DeltaTable

    marks = {}
    for path in paths:
        for info in DeltaTable(str(path)).history(20):
            if "userMetadata" in info:
                marks[path.name] = json.loads(info["userMetadata"])["gamelake.bronze_version"]
                break
    return marks


def run(tables: int, rounds: int, rows: int) -> list[str]:
    with tempfile.TemporaryDirectory(prefix="gamelake-mark-") as tmp:
        spark = _session(Path(tmp) / "warehouse")
        ways = _ways(spark, rows)
        names = {way: [f"default.t{i}_{n}" for n in range(tables)] for i, way in enumerate(ways)}
        for table in (t for group in names.values() for t in group):
            spark.sql(
                f"create table {table} (event_id string, gamer_id string, event_date date,"
                " silver_loaded_at timestamp) using delta partitioned by (event_date)"
                " tblproperties (delta.enableChangeDataFeed = true)"
            )
        times: dict[str, list[float]] = {way: [] for way in ways}
        for mark in range(rounds + 1):  # round 0 warms the session and is not counted
            for way, write in ways.items():
                per_table = [_timed(partial(write, table, mark)) for table in names[way]]
                if mark:
                    times[way].extend(per_table)
        user_tables = names["insert with userMetadata"]
        reads = {
            "show tblproperties (Spark)": [
                _timed(partial(_collect, spark, f"show tblproperties {t}")) for t in user_tables
            ],
            "describe history limit 20 (Spark)": [
                _timed(partial(_collect, spark, f"describe history {t} limit 20")) for t in user_tables
            ],
        }
        paths = [Path(tmp) / "warehouse" / "spark" / t.split(".")[1] for t in user_tables]
        start = time.perf_counter()
        found = _delta_rs_marks(paths)
        reads["userMetadata of every table, delta-rs"] = [time.perf_counter() - start]
        assert set(found.values()) == {rounds}, f"delta-rs read {found}, expected {rounds} for each table"
        recorded = {
            way: _delta_rs_marks([Path(tmp) / "warehouse" / "spark" / t.split(".")[1] for t in names[way]])
            for way in names
            if "userMetadata" in way
        }
        txn = spark.sql(f"describe history {names['insert with txn'][0]} limit 1").first()
        spark.stop()
    body = [
        f"- {tables} tables of {rows} rows a write, {rounds} rounds after a warm-up round, one warm session",
        "",
        "| way to record the mark | commits a build | mark recorded in every table | median s per table"
        " | p90 s |",
        "|---|---:|---|---:|---:|",
    ]
    commits = {"insert + set tblproperties": 2}
    for way, values in times.items():
        ordered = sorted(values)
        p90 = ordered[int(0.9 * (len(ordered) - 1))]
        marks = recorded.get(way)
        kept = (
            "n/a"
            if marks is None
            else ("yes" if len(marks) == tables and set(marks.values()) == {rounds} else "no")
        )
        body.append(
            f"| {way} | {commits.get(way, 1)} | {kept} | {statistics.median(values):.3f} | {p90:.3f} |"
        )
    body += ["", "| reading marks back | calls | median s a call |", "|---|---:|---:|"]
    for what, values in reads.items():
        body.append(f"| {what} | {len(values)} | {statistics.median(values):.3f} |")
    body.append(f"\n- the txn write's commit: operation {txn['operation']}, version {txn['version']}")
    return body


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tables", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--rows", type=int, default=100)
    args = parser.parse_args()
    body = run(args.tables, args.rounds, args.rows)
    append_section(RESULTS, "Mark in the data commit", body, heading="# Where a reader's mark rides\n")


if __name__ == "__main__":
    main()
