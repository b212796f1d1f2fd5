"""What a statement on a Delta table pays for the entries its ``_delta_log`` directory keeps.

    python -m bench.log_listing [--entries 0,4000,40000,400000] [--rounds 6]

bench/wall_profile.py found 3.9 s of a steady 6,000-event cycle's statement threads in
``HadoopFileSystemLogStore.listFrom``, which lists a table's whole ``_delta_log`` directory (on
the local file system a status call for every entry, Hadoop's hidden ``.crc`` side files
included) and then drops the names before the version it starts from. Each commit leaves four
entries there (its JSON, Delta's checksum, and Hadoop's ``.crc`` of each) until a log cleanup
removes those older than ``delta.logRetentionDuration``: Delta's default of 30 days, which
silver, gold and the slice keep. At one commit a cycle every 20-30 s that is 350,000-520,000
entries a table.

In one warm local Spark session, on a small Delta table like a game's silver (partitioned by
day, change data feed on), each step pads ``_delta_log`` up to ``--entries`` with empty hidden
files (``.pad-NNNNNNN.json.crc``: listed and stat'ed as an old commit's side file is, read by no
one), then times, as medians of ``--rounds`` after one warm-up: Hadoop's ``listStatus`` of the
directory; a listing from the table's newest version (what Delta asks for) by Delta's own local
log store and by gamelake's (native/local-logstore, which reads the status only of the entries
it returns); an INSERT of 100 rows (a statement and its commit, which list the log), and the first
count of the new snapshot. Printed and appended to bench/results/log_listing.md with the machine
and date.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.results_file import append_section
from ingest.core.settings.paths import PROJECT_DIR

RESULTS = PROJECT_DIR / "bench" / "results" / "log_listing.md"
ENTRIES = "0,4000,40000,400000"


def _timed(run: Any) -> float:
    started = time.perf_counter()
    run()
    return time.perf_counter() - started


def pad(log: Path, entries: int) -> int:
    """Add empty hidden files to ``log`` until it holds ``entries`` (never removes any): how many."""
    existing = sum(1 for _ in log.iterdir())
    for number in range(existing, entries):
        (log / f".pad-{number:07d}.json.crc").touch()
    return max(existing, entries)


def measure(spark: Any, table: Path, rounds: int) -> dict[str, float]:
    """Medians (s) of the directory's listing, a listing from the table's version by Delta's own
    local log store and by gamelake's, an INSERT and the next count (through the store the session
    names), after one warm-up."""
    jvm, conf = spark._jvm, spark._jsc.hadoopConfiguration()
    log = jvm.org.apache.hadoop.fs.Path(str(table / "_delta_log"))
    fs = log.getFileSystem(conf)
    stores = {
        "Delta's listFrom": jvm.io.delta.storage.LocalLogStore(conf),
        "gamelake's listFrom": jvm.io.gamelake.delta.NameListingLogStore(conf),
    }
    insert = f"insert into delta.`{table}` select id, current_date() from range(100)"
    count = f"select count(*) from delta.`{table}` where event_date = current_date()"
    times: dict[str, list[float]] = {name: [] for name in ["listStatus of _delta_log", *stores]}
    times |= {"insert 100 rows": [], "first count after": []}
    for _ in range(rounds + 1):
        times["listStatus of _delta_log"].append(_timed(lambda: fs.listStatus(log)))
        version = spark.sql(f"describe history delta.`{table}` limit 1").first()["version"]
        start = jvm.org.apache.hadoop.fs.Path(log, f"{version:020d}.")
        for name, store in stores.items():
            times[name].append(_timed(lambda store=store, start=start: _drain(store.listFrom(start, conf))))
        times["insert 100 rows"].append(_timed(lambda: spark.sql(insert).collect()))
        times["first count after"].append(_timed(lambda: spark.sql(count).collect()))
    return {name: statistics.median(values[1:]) for name, values in times.items()}


def _drain(listed: Any) -> None:
    while listed.hasNext():
        listed.next()


def spark_store() -> str:
    from ingest.core.spark.session import spark_settings

    return spark_settings().get("spark.delta.logStore.file.impl", "Delta's own")


def run(steps: list[int], rounds: int) -> list[str]:
    from ingest.core.spark.session import local_session

    rows = []
    with tempfile.TemporaryDirectory(prefix="log-listing-") as root:
        spark = local_session(Path(root) / "warehouse")
        table = Path(root) / "silver_like"
        spark.sql(
            f"create table delta.`{table}` (n bigint, event_date date) using delta"
            " partitioned by (event_date) tblproperties (delta.enableChangeDataFeed = true)"
        )
        try:
            for entries in steps:
                held = pad(table / "_delta_log", entries)
                medians = measure(spark, table, rounds)
                rows.append(
                    f"| {held:,} | " + " | ".join(f"{value:.3f}" for value in medians.values()) + " |"
                )
                print(rows[-1], flush=True)
        finally:
            spark.stop()
    return [
        f"- a silver-like table (100 rows an INSERT, partitioned by day, change data feed on); medians of "
        f"{rounds} rounds after a warm-up; entries in `_delta_log` when the step began; the INSERT and "
        f"the count list through the session's store "
        f"(`spark.delta.logStore.file.impl`: {spark_store()})",
        "",
        "| entries in _delta_log | listStatus s | listFrom, Delta's local store s | listFrom, gamelake's s "
        "| INSERT of 100 rows s | first count after s |",
        "|---:|---:|---:|---:|---:|---:|",
        *rows,
        "",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--entries", default=ENTRIES, help="comma-separated steps, ascending")
    parser.add_argument("--rounds", type=int, default=6)
    args = parser.parse_args()
    try:
        steps = [int(step) for step in args.entries.split(",")]
    except ValueError:
        raise SystemExit(f"--entries {args.entries!r}: give whole numbers separated by commas") from None
    if steps != sorted(steps) or min(steps) < 0:
        raise SystemExit(f"--entries {args.entries!r}: give the steps ascending, 0 or more")
    body = run(steps, args.rounds)
    title = "A statement's cost against the entries its table's _delta_log holds"
    append_section(RESULTS, title, body, heading=f"# {title} (bench/log_listing.py)\n")


if __name__ == "__main__":
    main()
