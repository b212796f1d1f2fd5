"""``ingest refresh``: silver and gold brought up to bronze by ``dbt build``, once or continuously.

``--continuous`` keeps one process and one warm Spark session (dbt's programmatic runner; the
``local`` target's session method reuses the process's SparkSession) and builds whenever
bronze has a new Delta version, at most once per ``--min-interval`` seconds, each build reading
at most ``--max-versions-per-build`` bronze versions (a backlog is read in steps, one after the
other; after a failed build: later and fewer, see ``build_pacing``). SIGTERM or SIGINT stops it
after the build in progress, which is never cut in half. After its first (whole) build, a cycle
builds the bronze slice, then only the silver and gold of the games with rows in it
(``refresh_selection``; silver on ``--silver-threads`` dbt threads, each above one on a Spark
session of its own (``thread_sessions``), then gold on ``--gold-threads``): a game
without new events costs no Spark job and no commit. Each build
is incremental by
the contract in doc/DESIGN.md ("The incremental contract"), so a stop, a crash or a second
refresh never loses or doubles a row.

Metrics on ``--metrics-port``: how far silver and gold trail bronze (seconds since the first
bronze version they have not read appeared), the bronze version the last build covered, and
build counts and times. The same port serves a dashboard of them at ``/dashboard``.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import functools
import json
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from ingest.core.errors import ConfigError, IngestError
from ingest.core.logs.setup import add_log_format_argument, configure_logging
from ingest.core.metrics.history import Kind, MetricHistory, Panel
from ingest.core.settings.paths import PROJECT_DIR
from ingest.core.stop_signals import stop_on_signals
from ingest.landing.delta.table_location import TableLocation, as_location
from ingest.ops.bronze_marks import ReaderMarks
from ingest.ops.bronze_watch import BronzeWatch
from ingest.ops.build_pacing import BuildPacing
from ingest.ops.codegen_mode import INTERPRETED_BELOW_ROWS, classes_compiled, interpreted, set_mode
from ingest.ops.cycle_facts import handing_cycle_facts
from ingest.ops.dbt_build_lock import LOCK_HELD_VAR, BuildLockHeld, holding_build_lock, new_holder
from ingest.ops.lakehouse_checkpoints import DEFAULT_CHECKPOINT_COMMITS, DEFAULT_LOG_HOURS, SPARK_INTERVAL
from ingest.ops.lakehouse_upkeep import (
    DEFAULT_COMPACT_FILES,
    DEFAULT_VACUUM_HOURS,
    EVERYTHING,
    UpkeepPolicy,
    Written,
    upkeep_written,
)
from ingest.ops.refresh_selection import (
    SLICE,
    SLICE_MODEL,
    build_after_slice,
    build_selection,
    read_slice_readers,
)
from ingest.ops.thread_sessions import sessions_for
from ingest.ops.warm_dbt import WarmDbt

log = logging.getLogger("gamelake.refresh")
DEFAULT_MAX_ROWS = 600_000  # half the 1.2M-row slice that ran a 2 GB driver out of memory
# gold models on two threads overlap one's driver work with the other's jobs: bench/results/gold_threads.md
DEFAULT_GOLD_THREADS = 2
# silver on two threads, a Spark session each: a cycle's median 0.96 at 60 games over 6 pairs,
# about 1.0 at 5 over 8, JVM CPU even to a tenth more (bench/results/silver_threads_pairs.md)
DEFAULT_SILVER_THREADS = 1
PROFILES_DIR = PROJECT_DIR / "profiles"

REGISTRY = CollectorRegistry()
BUILDS = Counter("gamelake_refresh_builds_total", "dbt builds by outcome", ["outcome"], registry=REGISTRY)
BUILD_SECONDS = Histogram(
    "gamelake_refresh_build_seconds",
    "Wall time of one dbt build",
    registry=REGISTRY,
    buckets=(2, 5, 10, 15, 20, 30, 45, 60, 120, 300),
)
LAYER_LAG = Gauge(
    "gamelake_layer_lag_seconds",
    "How far a layer trails bronze: seconds since the first bronze version it has not read appeared",
    ["layer"],
    registry=REGISTRY,
)
BUILT_VERSION = Gauge(
    "gamelake_refresh_bronze_version", "The bronze version the last good build covered", registry=REGISTRY
)
LAST_SUCCESS = Gauge(
    "gamelake_refresh_last_success_timestamp_seconds", "When the last good build ended", registry=REGISTRY
)
for _outcome in ("ok", "failed"):
    BUILDS.labels(_outcome)
for _layer in ("silver", "gold"):
    LAYER_LAG.labels(_layer).set(0)

DASHBOARD_PANELS = (
    *(
        Panel(
            f"{layer.capitalize()} lag (seconds)",
            "gamelake_layer_lag_seconds",
            labels={"layer": layer},
            note=f"seconds since the first bronze version {layer} has not read appeared",
        )
        for layer in ("silver", "gold")
    ),
    Panel(
        "Seconds since the last good build",
        "gamelake_refresh_last_success_timestamp_seconds",
        Kind.SINCE,
        note="grows while bronze is quiet too (no new version, no build); 0 before the first",
    ),
    Panel(
        "Good builds per minute",
        "gamelake_refresh_builds_total",
        Kind.RATE,
        labels={"outcome": "ok"},
        scale=60,
    ),
    Panel(
        "Failed builds per minute",
        "gamelake_refresh_builds_total",
        Kind.RATE,
        labels={"outcome": "failed"},
        scale=60,
        note="anything above 0: read dbt's output in the refresh log",
    ),
)


# the project parsed once for the process, parsed again when its files change (warm_dbt.py)
_DBT = WarmDbt(PROJECT_DIR, PROFILES_DIR)


def _dbt(*args: str) -> bool:
    return bool(_DBT.invoke(*args).success)


def _slice_summary(spark: Any) -> tuple[int, int]:
    """(bronze version the slice covers, new rows it held) after a build."""
    row = spark.sql(
        f"select max(slice_to_version) as to_version, count(bronze_version) as new_rows from {SLICE}"
    ).first()
    return int(row["to_version"]), int(row["new_rows"])


# /healthz's view of the builds, kept here rather than read back from the metric objects
@dataclass
class _Outcomes:
    builds_failed: int = 0
    last_success: float | None = None
    gold_classes: int | None = None  # generated classes this build's gold step compiled


_OUTCOMES = _Outcomes()


# One holder for the process: the same --vars every cycle, so the project is parsed once.
HOLDER = new_holder("refresh")


@contextlib.contextmanager
def cycle_lock(tables_dir: Path | TableLocation) -> Iterator[dict[str, str]]:
    """dbt's build lock, taken once for a cycle's invocations with delta-rs, where dbt's own
    hooks would take and release it in each at a MERGE and a DELETE apiece
    (bench/results/build_lock.md). Yields the var that tells the hooks the caller holds it; none
    before a first build has made the lock's table, when dbt's hooks take it themselves."""
    with holding_build_lock(tables_dir, "refresh", HOLDER, stale_after=_lock_stale_after()) as held:
        yield {LOCK_HELD_VAR: HOLDER} if held else {}


def _lock_stale_after() -> dt.timedelta:
    """The age at which dbt takes a lock over as a crashed build's (gamelake_build_lock_minutes)."""
    project = yaml.safe_load((PROJECT_DIR / "dbt_project.yml").read_text(encoding="utf-8"))
    return dt.timedelta(minutes=int(project["vars"]["gamelake_build_lock_minutes"]))


def _build(
    spark: Any,
    watch: BronzeWatch,
    bounds: dict[str, int],
    whole: bool,
    upkeep: UpkeepPolicy | None,
    gold_threads: int = DEFAULT_GOLD_THREADS,
    silver_threads: int = DEFAULT_SILVER_THREADS,
) -> bool:
    """The whole project, or the slice and then only the games with rows in it (refresh_selection),
    then the upkeep of what a good build wrote (lakehouse_upkeep), under one build lock."""
    tables_dir = as_location(watch.readers.silver_dir).parent
    try:
        with cycle_lock(tables_dir) as held:
            given = {**bounds, **held}
            written = _build_locked(spark, watch, tables_dir, given, whole, (silver_threads, gold_threads))
            if written is not None and upkeep is not None:
                _upkeep(spark, tables_dir, written, upkeep)
            return written is not None
    except BuildLockHeld as refused:
        log.error("refresh: %s", refused)
        return False


def _upkeep(spark: Any, tables_dir: Path | TableLocation, written: Written, policy: UpkeepPolicy) -> None:
    done = upkeep_written(spark, tables_dir, written, policy)
    log.info(
        "refresh: upkeep of %d tables: compacted %s (%d files, %.1f s), vacuumed %d files (%.2f s),"
        " checkpointed %s (%.2f s)",
        done.tables,
        " ".join(done.compacted) or "none",
        done.files_packed,
        done.compact_seconds,
        done.files_vacuumed,
        done.vacuum_seconds,
        " ".join(done.checkpointed) or "none",
        done.checkpoint_seconds,
        extra={
            "event": "refresh_upkeep",
            "compacted": done.compacted,
            "compact_seconds": round(done.compact_seconds, 2),
            "files_vacuumed": done.files_vacuumed,
            "vacuum_seconds": round(done.vacuum_seconds, 2),
            "checkpointed": done.checkpointed,
            "checkpoint_seconds": round(done.checkpoint_seconds, 2),
        },
    )


def _build_locked(
    spark: Any,
    watch: BronzeWatch,
    tables_dir: TableLocation,
    given_vars: dict[str, Any],
    whole: bool,
    threads: tuple[int, int],
) -> Written | None:
    """``threads``: silver's and gold's dbt threads."""
    given = {name: value for name, value in given_vars.items() if value}
    bound = ["--vars", json.dumps(given)] if given else []
    if whole:
        return EVERYTHING if _dbt("build", *bound) else None
    if not _dbt("build", "--select", SLICE_MODEL, *bound):
        return None
    readers = read_slice_readers(spark)
    selection = build_selection(readers)
    if not selection:
        log.info("refresh: no game has new rows in the slice; nothing more to build")
        return Written((), quarantine=False)
    log.info("refresh: building %s", " ".join(selection))
    # what the models would ask Spark one by one, read once for the games built
    with handing_cycle_facts(spark, tables_dir, readers, LOCK_HELD_VAR in given) as hand_gold_step:
        gold_began: list[int] = []  # classes compiled when the gold step began

        def before_gold() -> None:
            watch.hand_table_versions_to(spark)
            hand_gold_step()  # after the versions: it reads silver's batches up to them
            # gold writes a few rows a player or a day: generating code for its plans cost a
            # 140,000-row cycle 8 s and saved nothing at 590,000 (bench/results/gold_codegen_pairs.md)
            set_mode(spark, True)
            gold_began.append(classes_compiled(spark))

        # the same vars: a change would re-parse
        silver_threads, gold_threads = threads
        sessions = functools.partial(sessions_for, spark, silver_threads)
        ok = build_after_slice(
            _DBT.invoke, selection, bound, gold_threads, before_gold, silver_threads, sessions
        )
        if gold_began:  # counted before the upkeep, whose compaction runs compiled
            _OUTCOMES.gold_classes = classes_compiled(spark) - gold_began[0]
    return Written(tuple(readers.games_to_build()), readers.quarantine_to_build()) if ok else None


@dataclass(frozen=True)
class CycleSize:
    """How much a build may read, and how much is waiting: bounds of 0 mean no bound."""

    max_versions: int = 0
    max_rows: int = 0
    pending_rows: int | None = None  # new bronze rows since the last build; None: not known
    interpreted_below: int = INTERPRETED_BELOW_ROWS  # fewer rows than this run interpreted

    def runs_interpreted(self) -> bool:
        rows = self.pending_rows
        if rows is not None and self.max_rows:
            rows = min(rows, self.max_rows)
        return interpreted(rows, self.interpreted_below)


def build_once(
    spark: Any,
    watch: BronzeWatch,
    size: CycleSize = CycleSize(),
    whole: bool = True,
    upkeep: UpkeepPolicy | None = None,
    gold_threads: int = DEFAULT_GOLD_THREADS,
    silver_threads: int = DEFAULT_SILVER_THREADS,
) -> int | None:
    """One build reading at most ``size``'s bronze versions and rows: the whole project, or
    (``whole=False``) only the games with new rows; the bronze version it covered, or None when
    it failed. A small cycle's statements run interpreted (ingest/ops/codegen_mode.py). With
    ``upkeep``, a good build's tables are compacted and vacuumed as it says. Above one
    ``gold_threads``, a cycle builds silver on ``silver_threads``, each on a Spark session of its
    own (ingest/ops/thread_sessions.py), and then gold on ``gold_threads``."""
    started = time.monotonic()
    max_rows, max_versions = size.max_rows, size.max_versions
    run_interpreted = size.runs_interpreted()
    set_mode(spark, run_interpreted)
    compiled_before = classes_compiled(spark)
    _OUTCOMES.gold_classes = None
    if max_rows:
        watch.hand_rows_to(spark)
    watch.hand_versions_to(spark)  # marks and versions, read once from the Delta logs
    bounds = {"gamelake_slice_max_versions": max_versions, "gamelake_slice_max_rows": max_rows}
    ok = _build(spark, watch, bounds, whole, upkeep, gold_threads, silver_threads)
    took = time.monotonic() - started
    BUILD_SECONDS.observe(took)
    BUILDS.labels("ok" if ok else "failed").inc()
    if not ok:
        _OUTCOMES.builds_failed += 1
        log.error("refresh: dbt build failed after %.1f s (see dbt's output above)", took)
        return None
    covered, new_rows = _slice_summary(spark)
    generated = classes_compiled(spark) - compiled_before
    gold = _OUTCOMES.gold_classes
    in_gold = "no gold step" if gold is None else f"{gold} in gold's step, interpreted"
    watch.forget_up_to(covered)
    BUILT_VERSION.set(covered)
    LAST_SUCCESS.set(time.time())
    _OUTCOMES.last_success = time.time()
    log.info(
        "refresh: build ok in %.1f s, bronze version %d, %d new bronze rows, %s, "
        "generated classes compiled: %d (%s)",
        took,
        covered,
        new_rows,
        "interpreted" if run_interpreted else "compiled",
        generated,
        in_gold,
        extra={
            "event": "refresh_build",
            "seconds": round(took, 1),
            "bronze_version": covered,
            "new_rows": new_rows,
            "interpreted": run_interpreted,
            "generated_classes": generated,
            "gold_generated_classes": gold,
        },
    )
    return covered


def run_continuously(
    spark: Any,
    watch: BronzeWatch,
    pacing: BuildPacing,
    interpreted_below: int = INTERPRETED_BELOW_ROWS,
    upkeep: UpkeepPolicy | None = None,
    gold_threads: int = DEFAULT_GOLD_THREADS,
    silver_threads: int = DEFAULT_SILVER_THREADS,
) -> int:
    built: int | None = None
    last_start = 0.0
    builds = 0
    with stop_on_signals() as stop:
        while not stop.is_set():
            version = watch.version()
            lag = watch.lag(built)
            for layer in ("silver", "gold"):
                LAYER_LAG.labels(layer).set(lag)
            waited = time.monotonic() - last_start
            if version is None or version == built or waited < pacing.interval():
                stop.wait(0.5)
                continue
            last_start = time.monotonic()
            # the first build of a process builds everything (views, a game added meanwhile)
            size = CycleSize(pacing.versions(), pacing.rows(), watch.rows_after(built), interpreted_below)
            covered = build_once(
                spark,
                watch,
                size,
                whole=built is None,
                upkeep=upkeep,
                gold_threads=gold_threads,
                silver_threads=silver_threads,
            )
            if covered is None:
                pacing.failed(behind=version - (built if built is not None else -1))
                log.warning(
                    "refresh: next build in %.0f s, reading at most %d bronze versions and %d rows",
                    pacing.interval(),
                    pacing.versions(),
                    pacing.rows(),
                )
                continue
            pacing.succeeded()
            built, builds = covered, builds + 1
            if covered < version:  # a bounded step of a backlog: read on without waiting
                last_start = 0.0
        log.info("refresh: stopped by %s after %d builds", stop.reason, builds)
    return 0


def _health() -> dict[str, object]:
    return {"ok": True, "builds_failed": _OUTCOMES.builds_failed, "last_success": _OUTCOMES.last_success}


def silver_threads_for(given: int | None, gold_threads: int) -> int:
    """The dbt threads of silver's step: ``given`` (``--silver-threads``), or by default
    ``DEFAULT_SILVER_THREADS`` when gold has a step of its own and one when it has not (one gold
    thread builds silver and gold in one invocation)."""
    if given is None:
        return DEFAULT_SILVER_THREADS if gold_threads > 1 else 1
    if given < 1:
        raise ConfigError(f"--silver-threads {given}: give a number of dbt threads, 1 or more")
    if given > 1 and gold_threads == 1:
        raise ConfigError(
            f"--silver-threads {given} with --gold-threads 1: one gold thread builds silver"
            " and gold in one invocation on one thread; give --gold-threads 2 or more, or --silver-threads 1"
        )
    return given


def _refresh(args: argparse.Namespace) -> int:
    from ingest.core.metrics import prometheus as metrics
    from ingest.core.metrics.dashboard_page import render_page
    from ingest.core.spark.object_storage import lakehouse_uri
    from ingest.core.spark.session import local_session, spark_settings

    configure_logging(logging.INFO, args.log_format or "auto")
    if args.compact_files < 0:
        raise ConfigError(
            f"--compact-files {args.compact_files}: give a number of files, or 0 for no compaction"
        )
    if args.vacuum_hours < 0:
        raise ConfigError(f"--vacuum-hours {args.vacuum_hours}: give a number of hours, 0 or more")
    if args.log_hours < 1:
        # the latest commits hold the readers' marks; a cleanup at 0 hours could take them
        raise ConfigError(f"--log-hours {args.log_hours}: give a number of hours, 1 or more")
    if args.checkpoint_commits < 0:
        raise ConfigError(
            f"--checkpoint-commits {args.checkpoint_commits}: give a number of commits, or 0 to leave"
            " checkpoints to Spark"
        )
    if args.gold_threads < 1:
        raise ConfigError(f"--gold-threads {args.gold_threads}: give a number of dbt threads, 1 or more")
    silver_threads = silver_threads_for(args.silver_threads, args.gold_threads)
    if args.min_interval < 0:
        raise ConfigError(f"--min-interval {args.min_interval}: give a number of seconds, 0 or more")
    for flag, value, unit in (
        ("--max-versions-per-build", args.max_versions_per_build, "bronze versions"),
        ("--max-rows-per-build", args.max_rows_per_build, "bronze rows"),
        ("--interpreted-below-rows", args.interpreted_below_rows, "bronze rows"),
    ):
        if value < 0:
            raise ConfigError(f"{flag} {value}: give a number of {unit}, or 0 for no bound")
    # the bronze dbt registers as its source (GAMELAKE_BRONZE_PATH, else under the warehouse), on
    # local disk or on S3 (GAMELAKE_INGEST_WAREHOUSE_URI)
    lakehouse = lakehouse_uri()
    conf = spark_settings(lakehouse=lakehouse)
    readers = ReaderMarks(TableLocation.of(conf["spark.sql.warehouse.dir"]).child("silver.db"))
    watch = BronzeWatch(TableLocation.of(conf["spark.gamelake.bronze.path"]), readers)
    spark = local_session(lakehouse=lakehouse)
    if not _dbt("seed"):
        raise IngestError("`dbt seed` failed (see its output above)")
    if not args.continuous:
        return 0 if build_once(spark, watch) is not None else 1
    server = None
    history = MetricHistory(REGISTRY, DASHBOARD_PANELS)
    if args.metrics_port:
        try:
            server = metrics.serve(
                "127.0.0.1",
                args.metrics_port,
                _health,
                REGISTRY,
                dashboard=lambda: render_page("gamelake refresh", history.series(), _health()),
            )
        except OSError as err:
            why = f"refresh metrics port {args.metrics_port} unavailable: {err.strerror}"
            raise ConfigError(f"{why}; choose another with --metrics-port") from None
        history.start()
    try:
        pacing = BuildPacing(args.min_interval, args.max_versions_per_build, args.max_rows_per_build)
        upkeep = UpkeepPolicy(args.compact_files, args.vacuum_hours, args.checkpoint_commits, args.log_hours)
        return run_continuously(
            spark, watch, pacing, args.interpreted_below_rows, upkeep, args.gold_threads, silver_threads
        )
    finally:
        if server is not None:
            server.shutdown()
            history.stop()


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "refresh",
        help="bring silver and gold up to bronze with dbt build, once or continuously",
        description="dbt seed, then dbt build on the local target. --continuous keeps one warm Spark "
        "session and builds whenever bronze has a new Delta version, at most once per --min-interval "
        "seconds, until SIGTERM or SIGINT (the build in progress finishes first). After its first "
        "build, only the games with new rows in bronze are built. With GAMELAKE_INGEST_WAREHOUSE_URI set "
        "(s3://bucket/prefix), bronze and silver and gold are read and written there.",
    )
    parser.add_argument("--continuous", action="store_true", help="keep building as bronze grows")
    parser.add_argument(
        "--min-interval", type=float, default=10.0, help="seconds between build starts (default 10)"
    )
    parser.add_argument(
        "--max-versions-per-build",
        type=int,
        default=60,
        help="with --continuous, the most bronze versions one build reads (about a minute of the "
        "ingest's commits; a backlog is worked off in steps; 0: no bound; default 60)",
    )
    parser.add_argument(
        "--max-rows-per-build",
        type=int,
        default=DEFAULT_MAX_ROWS,
        help="with --continuous, the most bronze rows one build reads (at least one bronze version; "
        f"0: no bound; default {DEFAULT_MAX_ROWS:,})",
    )
    parser.add_argument(
        "--interpreted-below-rows",
        type=int,
        default=INTERPRETED_BELOW_ROWS,
        help="with --continuous, a build reading fewer new bronze rows than this runs Spark's "
        "statements interpreted, not compiled, which is quicker for small builds (0: always "
        f"compiled; default {INTERPRETED_BELOW_ROWS:,})",
    )
    parser.add_argument(
        "--compact-files",
        type=int,
        default=DEFAULT_COMPACT_FILES,
        help="with --continuous, after a good build compact a silver or gold partition it wrote once "
        f"that holds this many small files (0: never; default {DEFAULT_COMPACT_FILES})",
    )
    parser.add_argument(
        "--vacuum-hours",
        type=int,
        default=DEFAULT_VACUUM_HOURS,
        help="with --continuous, after a good build delete the files of the tables it wrote that were "
        f"removed this many hours ago or more, and --log-hours ago at most (default {DEFAULT_VACUUM_HOURS})",
    )
    parser.add_argument(
        "--log-hours",
        type=int,
        default=DEFAULT_LOG_HOURS,
        help="with --continuous, the hours of Delta log the tables it wrote keep, removed after their "
        "checkpoints (every statement lists a table's log, so a long one slows each build), and "
        "their replaced files; a gold table that trails its silver longer recounts from silver's "
        f"snapshot (default {DEFAULT_LOG_HOURS})",
    )
    parser.add_argument(
        "--checkpoint-commits",
        type=int,
        default=DEFAULT_CHECKPOINT_COMMITS,
        help="with --continuous, after a good build checkpoint a table it wrote (delta-rs) once this many "
        "commits have followed its last checkpoint, a few tables a build (0: leave checkpoints to Spark, "
        f"every {SPARK_INTERVAL}th commit; default {DEFAULT_CHECKPOINT_COMMITS})",
    )
    parser.add_argument(
        "--gold-threads",
        type=int,
        default=DEFAULT_GOLD_THREADS,
        help="with --continuous, the dbt threads gold is built on, after silver's step (1: silver and gold "
        f"in one invocation on one thread; default {DEFAULT_GOLD_THREADS})",
    )
    parser.add_argument(
        "--silver-threads",
        type=int,
        default=None,
        help="with --continuous and more than one gold thread, the dbt threads silver is built on, each on a "
        f"Spark session of its own (default {DEFAULT_SILVER_THREADS})",
    )
    parser.add_argument(
        "--metrics-port", type=int, default=9109, help="port of the refresh's /metrics (0 disables; 9109)"
    )
    add_log_format_argument(parser)
    parser.set_defaults(handler=_refresh)
