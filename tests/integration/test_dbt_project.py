"""The dbt project end to end on real Spark + Delta: seed, build, incremental runs, a new game, docs.

One Spark session and one private warehouse for the module; the steps build on each other
(they are one story: first load, incremental load with schema evolution and late duplicates,
a new game), so each test asserts one stage of the same warehouse. Every expected value is
computed in Python from the bronze rows this module wrote (tests/integration/dbt_support.py).
"""

from __future__ import annotations

import json
import random
import re
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable

from ingest.core.contract import load_contract
from ingest.core.settings.paths import PROJECT_DIR
from ingest.games import model_files as games
from ingest.landing.delta.table_location import as_location
from ingest.ops import docs_site
from ingest.ops.bronze_marks import HANDED_CONF, BronzeMark, ReaderMarks, bronze_mark, committed_mark
from ingest.ops.bronze_watch import VERSIONS_CONF, BronzeWatch
from ingest.ops.cycle_facts import GOLD_MARKS_CONF, handing_cycle_facts
from ingest.ops.dbt_build_command import build_lock
from ingest.ops.dbt_build_lock import LOCK_HELD_VAR, new_holder
from ingest.ops.refresh_selection import (
    SILVER_CHECK,
    after_slice_args,
    build_after_slice,
    build_selection,
    read_slice_readers,
)
from ingest.ops.stats_columns import STATS_COLUMNS, stats_columns
from ingest.ops.thread_sessions import SESSION_PER_THREAD_CONF, session_per_thread
from tests.integration import dbt_support as support

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ACTIVE, INACTIVE, UNKNOWN, NEW_GAME = "alpha", "gamma", "ghost", "delta_dash"
SCREENSHOTS = PROJECT_DIR / ".cache" / "screenshots"  # kept for a look after the run
PAUSED = "beta"  # active for the first run, paused for the second, back for the third


class Lake(support.ProjectLake):
    """The module's warehouse: a project copy, a Spark session, the bronze rows written so far."""

    def __init__(self, root: Path, spark: Any) -> None:
        super().__init__(root, spark)
        self.quarantine: dict[str, list[str]] = {}
        self.timings: dict[str, float] = {}
        # Builds hold the build lock from Python, as `ingest dbt-build` and the refresh hold it,
        # under one holder for the module: dbt parses the whole project again when its vars
        # change. A plain `dbt build`'s hooks take the lock where a test passes hooks_lock=True.
        self.tables = as_location(root / "warehouse")
        self.holder = new_holder("tests")
        self.held = ("--vars", json.dumps({LOCK_HELD_VAR: self.holder}))

    def set_games(self, seeded: dict[str, bool]) -> None:
        support.write_seed(self.project, seeded)
        games.sync(self.project)
        self.seeded = seeded

    def dbt(
        self,
        *args: str,
        expect_success: bool = True,
        callbacks: tuple[Any, ...] = (),
        hooks_lock: bool = False,
    ) -> Any:
        if hooks_lock or "--vars" in args:
            result, failed = self.invoke(*args, callbacks=callbacks)
        else:
            result, failed = self._held(args, callbacks)
        assert result.success is expect_success, f"dbt {' '.join(args)}: {result.exception or failed}"
        return result

    def _held(self, args: tuple[str, ...], callbacks: tuple[Any, ...]) -> tuple[Any, list[str]]:
        if args[0] not in ("run", "build"):  # the same vars, so that dbt's partial parse holds
            return self.invoke(*args, *self.held, callbacks=callbacks)
        with build_lock(self.spark, self.tables, self.holder) as held:
            return self.invoke(*args, *held, callbacks=callbacks)

    def build(self, label: str, *select: str, hooks_lock: bool = False) -> Any:
        started = time.monotonic()
        result = self.dbt("build", *(("--select", *select) if select else ()), hooks_lock=hooks_lock)
        self.timings[label] = time.monotonic() - started
        if not select:  # quarantine is insert-only: each run adds new rejects, judged with that run's seed
            for key, reasons in support.expected_quarantine(self.rows, set(self.seeded)).items():
                self.quarantine.setdefault(key, reasons)
        return result

    def table(self, name: str) -> list[dict[str, Any]]:
        return [row.asDict() for row in self.spark.table(name).collect()]

    def columns(self, name: str) -> list[str]:
        return self.spark.table(name).columns


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lake]:
    root = tmp_path_factory.mktemp("dbt")
    # test_refresh_continuous.py runs a cycle compiled
    with support.local_spark(root / "warehouse", interpreted=True) as spark:
        lake = Lake(root, spark)
        try:
            yield lake
        finally:
            print("\ndbt timings (s):", {k: round(v, 1) for k, v in lake.timings.items()})


# Fixed reference times: batch one three days ago, batch two now (beyond the 60 min lookback).
NOW = datetime.now(UTC).replace(tzinfo=None, microsecond=0)
BATCH_ONE_AT = NOW - timedelta(days=3)
BATCH_TWO_AT = NOW - timedelta(minutes=30)


def _spread(start: datetime, index: int) -> datetime:
    return start + timedelta(seconds=7 * index)


@pytest.fixture(scope="module")
def writer() -> support.BronzeWriter:
    return support.BronzeWriter(random.Random(20240501))


def assert_silver_exact(lake: Lake, game: str) -> dict[str, dict[str, Any]]:
    expected = support.expected_silver(lake.rows, game)
    actual = {row["event_id"]: row for row in lake.table(f"silver.silver_{game}")}
    assert set(actual) == set(expected), f"silver_{game}: event ids differ"
    for event_id, want in expected.items():
        got = actual[event_id]
        assert (got["kafka_partition"], got["kafka_offset"]) == (
            want["_kafka_partition"],
            want["_kafka_offset"],
        ), f"silver_{game} {event_id}: kept a retry instead of the first landed copy"
        for bronze, silver in (
            ("gamer_id", "gamer_id"),
            ("event_type", "event_type"),
            ("score", "score"),
            ("level", "level"),
            ("duration_ms", "duration_ms"),
            ("client_build", "client_build"),
            ("event_timestamp", "event_at"),
        ):
            assert got[silver] == want.get(bronze), f"silver_{game} {event_id}.{silver}"
    return expected


def assert_gold_exact(lake: Lake, game: str, silver: dict[str, dict[str, Any]]) -> None:
    players = {row["gamer_id"]: row for row in lake.table(f"gold.gold_{game}_player_agg")}
    expected = support.expected_player_agg(silver)
    assert set(players) == set(expected), f"gold_{game}_player_agg: gamers differ"
    for gamer, want in expected.items():
        got = players[gamer]
        for column, value in want.items():
            assert got[column] == value, f"gold_{game}_player_agg {gamer}.{column}: {got[column]} != {value}"
    days = {row["event_date"]: row for row in lake.table(f"gold.gold_{game}_daily_active")}
    expected_days = support.expected_daily_active(silver)
    assert set(days) == set(expected_days), f"gold_{game}_daily_active: dates differ"
    for day, want in expected_days.items():
        for column, value in want.items():
            assert days[day][column] == value, f"gold_{game}_daily_active {day}.{column}"


def test_first_build_of_v1_bronze_is_exact(lake: Lake, writer: support.BronzeWriter) -> None:
    lake.set_games({ACTIVE: True, PAUSED: True, INACTIVE: False})
    rows = []
    for i in range(150):
        game = [ACTIVE, ACTIVE, PAUSED, INACTIVE, UNKNOWN, NEW_GAME][i % 6]
        rows.append(writer.event(game, 1, _spread(BATCH_ONE_AT, i)))
    rows += [writer.retry(rows[i], _spread(BATCH_ONE_AT, 200 + i)) for i in range(0, 30, 3)]  # retries
    rows.append(writer.event(ACTIVE, 1, _spread(BATCH_ONE_AT, 300), gamer_id=None))
    rows.append(writer.event(ACTIVE, 1, _spread(BATCH_ONE_AT, 301), event_type="teleport"))
    rows.append(
        writer.event(PAUSED, 1, _spread(BATCH_ONE_AT, 302), event_timestamp=BATCH_ONE_AT + timedelta(days=2))
    )
    lake.land(rows, support.schema_for(1))

    lake.build("full build", hooks_lock=True)  # a plain `dbt build`: its hooks make and take the lock

    for game in (ACTIVE, PAUSED):
        assert_gold_exact(lake, game, assert_silver_exact(lake, game))
    for table in (f"silver.silver_{INACTIVE}", f"gold.gold_{INACTIVE}_player_agg"):
        assert lake.table(table) == [], f"{table}: an inactive game gets a table but no rows"
    assert "session_id" in lake.columns(f"silver.silver_{ACTIVE}"), "v2+ columns exist as typed nulls"
    quarantine = {row["quarantine_id"]: row["reasons"] for row in lake.table("silver.silver_quarantine")}
    assert quarantine == lake.quarantine
    assert any("unknown_game" in r for r in quarantine.values()) and any(
        "has_gamer_id" in r for r in quarantine.values()
    )
    assert "message_type" in lake.columns("silver.silver_quarantine"), "which type a reject was sent as"


def test_dbt_creates_each_kind_of_table_with_statistics_on_its_readers_columns(lake: Lake) -> None:
    # set at creation by dbt_project.yml (silver) and the gold macros, no upkeep involved (right
    # after the first build: a later test makes a player_agg look older); what Spark then writes
    # is checked after a refresh (tests/integration/upkeep_checks.py)
    silver = ("silver.silver_quarantine", f"silver.silver_{ACTIVE}")
    for table in (*silver, f"gold.gold_{ACTIVE}_player_agg", f"gold.gold_{ACTIVE}_daily_active"):
        held = lake.spark.sql(f"show tblproperties {table} ('{STATS_COLUMNS}')").first()[1]
        wanted = stats_columns(table, [field.name for field in lake.spark.table(table).schema.fields])
        assert wanted is not None and held == wanted, table


def test_incremental_run_takes_new_versions_and_late_duplicates(
    lake: Lake, writer: support.BronzeWriter
) -> None:
    before = {row["event_id"]: row for row in lake.table(f"silver.silver_{ACTIVE}")}
    players_before = {row["gamer_id"]: row for row in lake.table(f"gold.gold_{ACTIVE}_player_agg")}
    paused_before = sorted(lake.table(f"silver.silver_{PAUSED}"), key=lambda r: r["event_id"])
    lake.set_games({ACTIVE: True, PAUSED: False, INACTIVE: False, NEW_GAME: True})  # pause one, add one

    # A late commit (or a dead-letter replay): old Kafka offsets and an _ingested_at a day older than
    # anything silver holds, in a new bronze commit. Silver reads by bronze version, so it is new
    # and must land once; a wall-clock high-water mark would skip it.
    late = writer.event(ACTIVE, 1, BATCH_ONE_AT - timedelta(days=1), _kafka_offset=3, _kafka_partition=7)
    lake.land([late], support.schema_for(1))
    retries = [writer.retry(r, _spread(BATCH_TWO_AT, i)) for i, r in enumerate(lake.rows[:40:4])]
    lake.land(retries, support.schema_for(1))
    new_rows: list[dict[str, Any]] = []
    for version in (2, 3, 4):
        batch = [
            writer.event(
                [ACTIVE, ACTIVE, PAUSED, UNKNOWN][i % 4],
                version,
                _spread(BATCH_TWO_AT, 100 * version + i),
                gamers=6,
            )
            for i in range(40)
        ]
        lake.land(batch, support.schema_for(version))
        new_rows += batch
    future = [
        writer.event(ACTIVE, 4, _spread(BATCH_TWO_AT, 900 + i), gamers=6) | {"party_size": 2 + i}
        for i in range(6)
    ]
    lake.land(future, support.schema_for(4, "party_size bigint"))  # a column no schema version knows yet
    new_rows += future

    lake.build("incremental build")

    silver = assert_silver_exact(lake, ACTIVE)
    assert_gold_exact(lake, ACTIVE, silver)
    # the anti-join read silver between the batch's earliest event (the late one) and its latest,
    # and the retries of batch one, three days old, were still found there
    times = [
        f"{r['event_timestamp']:%Y-%m-%d %H:%M:%S.%f}"
        for r in [late, *retries, *new_rows]
        if r["game_name"] == ACTIVE and r["event_timestamp"] is not None
    ]
    first, last = min(times), max(times)
    bound = f"loaded.event_at between timestamp '{first}' and timestamp '{last}'"
    assert bound in _compiled(lake, f"silver_{ACTIVE}")
    after = {row["event_id"]: row for row in lake.table(f"silver.silver_{ACTIVE}")}
    assert late["event_id"] in after, "a late bronze commit was skipped"
    fresh = set(after) - set(before)
    assert fresh == {r["event_id"] for r in new_rows if r["game_name"] == ACTIVE} | {late["event_id"]}, (
        "late duplicates re-inserted"
    )
    for event_id, row in before.items():
        assert after[event_id]["silver_loaded_at"] == row["silver_loaded_at"], "a loaded row was rewritten"
    history = lake.spark.sql(f"describe history silver.silver_{ACTIVE}").where("operation = 'WRITE'").first()
    assert int(history["operationMetrics"]["numOutputRows"]) == len(fresh), (
        "the run wrote more than the new rows"
    )
    touched = {r["gamer_id"] for r in [*new_rows, late] if r["game_name"] == ACTIVE}
    players = {row["gamer_id"]: row for row in lake.table(f"gold.gold_{ACTIVE}_player_agg")}
    untouched = [g for g in players_before if g not in touched]
    assert untouched, "the data should leave some gamers untouched by the second batch"
    for gamer in untouched:
        assert players[gamer]["updated_at"] == players_before[gamer]["updated_at"], (
            "gold rewrote an untouched gamer's row"
        )

    # schema evolution without full refresh: v2-v4 values arrive, the unknown column is appended
    assert "party_size" in lake.columns(f"silver.silver_{ACTIVE}")
    sizes = {r["event_id"]: r["party_size"] for r in lake.table(f"silver.silver_{ACTIVE}")}
    assert {e: sizes[e] for e in sizes if sizes[e] is not None} == {
        r["event_id"]: r["party_size"] for r in future if r["event_id"] in silver
    }
    paused_after = sorted(lake.table(f"silver.silver_{PAUSED}"), key=lambda r: r["event_id"])
    # it follows the schema (party_size is appended) but gets no rows and no updates
    assert [{k: r[k] for k in paused_before[0]} for r in paused_after] == paused_before, (
        "a paused game's silver changed"
    )
    quarantine = {row["quarantine_id"]: row["reasons"] for row in lake.table("silver.silver_quarantine")}
    assert quarantine == lake.quarantine


def test_a_new_game_gets_its_tables_backfilled_from_bronze(lake: Lake) -> None:
    # added to the seed (and synced) before the incremental run above; its rows were in bronze all along
    assert (lake.project / "models" / "silver" / "games" / f"silver_{NEW_GAME}.sql").is_file()
    assert_gold_exact(lake, NEW_GAME, assert_silver_exact(lake, NEW_GAME))
    union = lake.table("gold.gold_all_games_player_agg")
    assert {row["game_slug"] for row in union} == {ACTIVE, PAUSED, NEW_GAME}  # gamma is inactive: no rows
    per_game = sum(len(lake.table(f"gold.gold_{g}_player_agg")) for g in lake.seeded)
    assert len(union) == per_game


def test_resuming_a_paused_game_catches_up(lake: Lake) -> None:
    lake.set_games({ACTIVE: True, PAUSED: True, INACTIVE: False, NEW_GAME: True})

    lake.build("build of one resumed game", "games", f"silver_{PAUSED}+")

    assert_gold_exact(lake, PAUSED, assert_silver_exact(lake, PAUSED))


def test_seed_edited_without_sync_fails_the_build_naming_the_row(lake: Lake) -> None:
    seed = lake.project / "seeds" / "games.csv"
    original = seed.read_text()
    seed.write_text(original + "late_game,Late Game,true,S,arcade,pc,2024-01-01\n")
    try:
        lake.dbt("seed", "--select", "games")
        result = lake.dbt("test", "--select", "assert_games_seed_matches_models", expect_success=False)
        node = next(
            r.node for r in result.result.results if r.node.name == "assert_games_seed_matches_models"
        )
        problems = [row[1] for row in lake.spark.sql(node.compiled_code).collect()]
        assert problems == [
            "game late_game is in seeds/games.csv but has no generated models: run `ingest games sync`"
        ]
        games.sync(lake.project)
        lake.dbt("test", "--select", "assert_games_seed_matches_models")
    finally:
        seed.write_text(original)
        games.sync(lake.project)
        lake.dbt("seed", "--select", "games")


def test_full_refresh_is_refused(lake: Lake) -> None:
    def history() -> list[tuple[int, str]]:
        rows = lake.spark.sql(f"describe history silver.silver_{ACTIVE}").collect()
        return [(row["version"], row["operation"]) for row in rows]

    before = {row["event_id"]: row["silver_loaded_at"] for row in lake.table(f"silver.silver_{ACTIVE}")}
    last_version = max(version for version, _ in history())

    lake.dbt("run", "--full-refresh", "--select", f"silver_{ACTIVE}")

    after = {row["event_id"]: row["silver_loaded_at"] for row in lake.table(f"silver.silver_{ACTIVE}")}
    assert after == before, "--full-refresh rebuilt silver"
    new_operations = [op for version, op in history() if version > last_version]
    assert not any("REPLACE" in op or "CREATE" in op for op in new_operations), new_operations


def test_producer_fields_named_like_staging_columns_reach_staging_renamed(
    lake: Lake, writer: support.BronzeWriter
) -> None:
    # A studio adds fields named like staging's own columns; the ingest lands them as sent. Without
    # the contract's passthrough_prefix rule every model would fail on a duplicate column.
    contract = load_contract()
    fields = {"schema_id": 777, "event_at": "local noon", "bronze_row_key": "k-1"}
    rows = [writer.event(ACTIVE, 4, NOW - timedelta(minutes=5), **fields) for _ in range(3)]
    lake.land(rows, support.schema_for(4) + ", schema_id bigint, event_at string, bronze_row_key string")

    lake.build(
        "build with colliding producer fields",
        "stg_bronze__game_events",
        "stg_bronze__new_events",
        f"silver_{ACTIVE}",
    )

    staged = lake.spark.sql(
        "select * from bronze.stg_bronze__game_events where event_id in ({})".format(
            ", ".join(f"'{row['event_id']}'" for row in rows)
        )
    ).collect()
    assert len(staged) == 3
    for row in staged:
        values = row.asDict()
        for name, sent in fields.items():
            assert values[contract.passthrough_name(name)] == sent
        assert values["schema_id"] == 4  # the contract's column, from bronze _schema_id
        assert values["bronze_row_key"].startswith("game-events:")
    assert {"proto_schema_id", "proto_event_at", "proto_bronze_row_key"} <= set(
        lake.columns(f"silver.silver_{ACTIVE}")
    )


def test_spark_reads_string_boolean_and_decimal_filters_on_bronze_statistics(
    lake: Lake, tmp_path: Path
) -> None:
    # The ingest's own writer (delta-rs) writes the statistics; Spark must read them and answer right.
    from tests.unit.test_bronze_statistics import write_bronze

    write_bronze(tmp_path / "bronze")
    table = lake.spark.read.format("delta").load(str(tmp_path / "bronze"))
    for predicate, rows in [
        ("name = 'player-1'", 3),
        ("flag", 3),
        (f"big = {2**64 - 2}", 3),
        (f"long_name = '{'é' * 40}1'", 3),
        ("maybe is null", 6),
        ("name > 'player-0'", 6),
    ]:
        assert table.where(predicate).count() == rows, predicate


def test_spark_reads_the_ingests_native_nested_columns(lake: Lake, tmp_path: Path) -> None:
    # Structs, arrays, maps, binary, decimals and JSON text as the ingest's writer lands them.
    from gamelake_dev.studio_schema import comparable, expected

    from tests.unit.test_native_types import write_studio_bronze

    sent = write_studio_bronze(tmp_path / "bronze")
    table = lake.spark.read.format("delta").load(str(tmp_path / "bronze"))
    rows = {row["event_id"]: _plain(row.asDict(recursive=True)) for row in table.collect()}
    for row in rows.values():  # Spark gives a map as a dict, pyarrow as (key, value) pairs
        row["stats"], row["wallet"] = list(row["stats"].items()), list(row["wallet"].items())
    for message in sent:
        want = expected(message)
        want.pop("event_timestamp")  # Spark shows it in the session's time zone, compared below
        got = comparable(rows[message.event_id])
        got.pop("event_timestamp")
        assert got == want, message.event_id
    bows = [m.event_id for m in sent if m.HasField("loadout") and m.loadout.weapon == "bow"]
    assert sorted(r.event_id for r in table.where("loadout.weapon = 'bow'").collect()) == sorted(bows)
    kills = [m.stats["kills"] for m in sent if "kills" in m.stats]
    assert table.where("stats['kills'] is not null").count() == len(kills)
    stamps = table.selectExpr("event_id", "cast(unix_micros(event_timestamp) as bigint) as micros").collect()
    set_stamps = {
        m.event_id: m.event_timestamp.ToMicroseconds() for m in sent if m.HasField("event_timestamp")
    }
    assert {r.event_id: r.micros for r in stamps if r.micros is not None} == set_stamps


def _plain(value: Any) -> Any:
    """A Spark row's values as pyarrow's to_pylist gives them: bytes, not bytearray."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, bytearray):
        return bytes(value)
    return value


def test_nested_producer_fields_reach_staging_and_silver_natively(
    lake: Lake, writer: support.BronzeWriter
) -> None:
    nested = {"loadout": {"weapon": "bow", "level": 3}, "perks": ["swift", "stone"], "tallies": {"kills": 4}}
    rows = [writer.event(ACTIVE, 4, NOW - timedelta(minutes=4), **nested) for _ in range(3)]
    types = "loadout struct<weapon:string,level:int>, perks array<string>, tallies map<string,bigint>"
    lake.land(rows, support.schema_for(4, types))

    lake.build(
        "build with nested producer fields",
        "stg_bronze__game_events",
        "stg_bronze__new_events",
        f"silver_{ACTIVE}",
    )

    ids = ", ".join(f"'{row['event_id']}'" for row in rows)
    query = (
        "select loadout.weapon as weapon, perks[1] as perk, tallies['kills'] as kills "
        "from {} where event_id in ({})"
    )
    for relation in ("bronze.stg_bronze__game_events", f"silver.silver_{ACTIVE}"):
        found = [tuple(r) for r in lake.spark.sql(query.format(relation, ids)).collect()]
        assert found == [("bow", "stone", 4)] * 3, relation


def test_docs_site_shows_each_games_lineage(lake: Lake, tmp_path: Path) -> None:
    lake.dbt("docs", "generate")
    docs_site.finish(lake.project / "target")
    with support.docs_browser(lake.project / "target", tmp_path / "chromium-profile") as browser:
        lineage = browser.lineage()
        one_game = browser.lineage(f"overview?g_v=1&g_i=%2Bsilver_{ACTIVE}%2B")
        overview = browser.page_text("overview")
        shots = [
            browser.screenshot("overview", SCREENSHOTS / "docs-overview.png"),
            browser.screenshot(f"overview?g_v=1&g_i=%2Bsilver_{ACTIVE}%2B", SCREENSHOTS / "docs-lineage.png"),
        ]

    nodes, edges = set(lineage["nodes"]), {tuple(edge) for edge in lineage["edges"]}
    assert not {n for n in nodes if n.startswith(("test.", "unit_test."))}, "tests crowd the default graph"
    bronze, staging = "source.gamelake.bronze.game_events", "model.gamelake.stg_bronze__new_events"
    assert (bronze, staging) in edges
    assert (bronze, "model.gamelake.stg_bronze__game_events") in edges
    for game in lake.seeded:
        silver = f"model.gamelake.silver_{game}"
        golds = [f"model.gamelake.gold_{game}_player_agg", f"model.gamelake.gold_{game}_daily_active"]
        assert {silver, *golds} <= nodes, f"{game}: per-game nodes missing from the lineage graph"
        assert (staging, silver) in edges
        assert all((silver, gold) in edges for gold in golds)
        assert (f"model.gamelake.gold_{game}_player_agg", "model.gamelake.gold_all_games_player_agg") in edges

    # one game's lineage: its own models and what feeds them, no other game's
    game_nodes = {n.split(".")[-1] for n in one_game["nodes"]}
    assert {f"silver_{ACTIVE}", f"gold_{ACTIVE}_player_agg", f"gold_{ACTIVE}_daily_active"} <= game_nodes
    assert "stg_bronze__new_events" in game_nodes
    assert not {n for n in game_nodes if n.startswith("silver_") and n != f"silver_{ACTIVE}"}

    # the project's own overview replaces dbt's generic landing page, picture included
    assert "Reading one game&#39;s lineage" in overview or "Reading one game's lineage" in overview
    assert "Where to find freshness" in overview and "Welcome!" not in overview
    assert 'src="doc/assets/pipeline.svg"' in overview
    assert (lake.project / "target" / "doc" / "assets" / "pipeline.svg").is_file()
    assert all(shot.stat().st_size > 10_000 for shot in shots)


def test_sql_lint_passes_on_the_incremental_branch(lake: Lake, monkeypatch: pytest.MonkeyPatch) -> None:
    # CI lints a clean clone, where no model exists yet and every `is_incremental()` branch renders
    # false. Here every model exists, so sqlfluff's dbt compile renders the incremental SQL instead.
    from sqlfluff.core import FluffConfig, Linter

    for name in (".sqlfluff", ".sqlfluffignore"):
        (lake.project / name).write_text((PROJECT_DIR / name).read_text())
    monkeypatch.chdir(lake.project)  # the templater's project_dir is `.`
    linter = Linter(config=FluffConfig.from_path(str(lake.project)))
    files = [
        file for path in linter.lint_paths(("models", "macros", "data-tests")).paths for file in path.files
    ]

    violations = {
        file.path: [f"L{v.line_no} {v.rule_code()} {v.desc()}" for v in file.violations]
        for file in files
        if file.violations
    }
    assert not violations, violations
    silver = next(file for file in files if Path(file.path).name == f"silver_{ACTIVE}.sql")
    assert silver.templated_file is not None and "left anti join" in silver.templated_file.templated_str, (
        "the incremental branch was not rendered"
    )


def _table_dir(lake: Lake, table: str) -> Path:
    return Path(lake.spark.sql(f"describe detail {table}").first()["location"].removeprefix("file:"))


def _delta_log(lake: Lake, table: str) -> DeltaTable:
    return DeltaTable(str(_table_dir(lake, table)))


def _mark(lake: Lake, table: str) -> BronzeMark | None:
    return bronze_mark(_delta_log(lake, table), table)


def test_clock_skew_is_quarantined_with_the_right_reason(lake: Lake, writer: support.BronzeWriter) -> None:
    # consoles with an unset clock (1970), a clock far ahead (2100) and an event with no time at all
    at = NOW - timedelta(minutes=3)
    skewed = {
        "not_before_launch": writer.event(ACTIVE, 4, at, event_timestamp=datetime(1970, 1, 1, 0, 0, 5)),
        "not_from_the_future": writer.event(ACTIVE, 4, at, event_timestamp=datetime(2100, 1, 1)),
        "has_event_time": writer.event(ACTIVE, 4, at, event_timestamp=None),
    }
    lake.land(list(skewed.values()), support.schema_for(4))

    lake.build("build with skewed clocks")

    quarantine = {row["quarantine_id"]: row["reasons"] for row in lake.table("silver.silver_quarantine")}
    assert quarantine == lake.quarantine
    for reason, row in skewed.items():
        key = f"{row['_kafka_topic']}:{row['_kafka_partition']}:{row['_kafka_offset']}"
        assert quarantine[key] == [reason], f"{reason}: quarantined as {quarantine.get(key)}"
    days = {row["event_date"] for row in lake.table(f"gold.gold_{ACTIVE}_daily_active")}
    assert not {d for d in days if d.year in (1970, 2100)}, "a skewed clock made a day of its own in gold"
    assert_gold_exact(lake, ACTIVE, assert_silver_exact(lake, ACTIVE))


def test_a_mark_behind_its_rows_loses_and_doubles_nothing(lake: Lake, writer: support.BronzeWriter) -> None:
    # A silver build's rows and its mark are one commit, so a crash leaves the mark where the rows
    # are or behind them (a build that died before its commit), never ahead. A mark behind reads
    # bronze versions again: handed a mark from before silver's last build, the next build
    # re-reads them, and gold, which never ran after that build, catches up from silver's feed.
    silver = f"silver.silver_{ACTIVE}"
    mark_before = _mark(lake, silver)
    assert mark_before is not None
    first = [writer.event(ACTIVE, 4, NOW - timedelta(minutes=2), gamers=6) for _ in range(20)]
    lake.land(first, support.schema_for(4))
    versions_before = _version(lake, silver)
    lake.build("silver only, then a crash", "stg_bronze__new_events", f"silver_{ACTIVE}")
    moved = _mark(lake, silver)
    assert moved is not None and moved.version > mark_before.version
    assert _version(lake, silver) == versions_before + 1, "silver's rows and mark took more than one commit"
    in_commit = committed_mark(_delta_log(lake, silver).history(1), silver)
    assert in_commit == moved, "the mark is not in the data commit"
    second = [writer.event(ACTIVE, 4, NOW - timedelta(minutes=1), gamers=6) for _ in range(20)]
    lake.land(second, support.schema_for(4))
    behind = {silver: [mark_before.version, datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S")]}
    lake.spark.conf.set("spark.gamelake.reader_marks", json.dumps(behind))
    try:
        lake.build("build after the crash")
    finally:
        lake.spark.conf.unset("spark.gamelake.reader_marks")

    planned = _slice_bounds(lake)["marks"][f"silver_{ACTIVE}"]
    assert planned == mark_before.version, "the slice was not planned from the mark behind"
    assert_gold_exact(lake, ACTIVE, assert_silver_exact(lake, ACTIVE))
    quarantine = {row["quarantine_id"]: row["reasons"] for row in lake.table("silver.silver_quarantine")}
    assert quarantine == lake.quarantine


def test_more_threads_than_one_on_the_shared_session_are_refused(
    lake: Lake, writer: support.BronzeWriter
) -> None:
    # A reader's mark is a conf of the Spark session, which dbt's threads share on the local
    # target: a second thread could commit under the first one's mark. Such a build stops in
    # on-run-start with the fix, before any model runs. The next test's build, on one thread,
    # takes the event landed here: the refusal left nothing in its way.
    lake.land([writer.event(ACTIVE, 4, NOW - timedelta(minutes=1))], support.schema_for(4))
    silver = f"silver.silver_{ACTIVE}"
    before = _version(lake, silver)
    refused = lake.dbt("build", "--threads", "2", expect_success=False, hooks_lock=True)
    message = str(refused.exception or refused.result)
    assert "GAMELAKE_DBT_THREADS=1" in message and "one shared Spark" in message, message
    assert _version(lake, silver) == before, "a model ran although the build was refused"
    assert lake.table("silver.gamelake_build_lock") == [], "the refused build left its lock behind"


def test_versions_handed_over_by_the_refresh_are_read_as_handed(
    lake: Lake, writer: support.BronzeWriter
) -> None:
    # `ingest refresh` reads bronze's and the readers' versions from their Delta logs before a
    # build and hands them over (spark.gamelake.table_versions), so no model asks `describe
    # history`. Bronze read before its newest commit is behind: the slice stops there. Silver is
    # built in the same invocation before gold, one commit past its handed version: gold reads
    # up to that commit, so it holds exactly what silver holds.
    silver_dir = _table_dir(lake, f"silver.silver_{ACTIVE}").parent
    watch = BronzeWatch(lake.bronze_path, ReaderMarks(silver_dir))
    first = [writer.event(ACTIVE, 4, NOW - timedelta(minutes=2), gamers=6) for _ in range(10)]
    lake.land(first, support.schema_for(4))
    handed_bronze = watch.version()
    second = [writer.event(ACTIVE, 4, NOW - timedelta(minutes=1), gamers=6) for _ in range(10)]
    lake.land(second, support.schema_for(4))
    watch.hand_versions_to(lake.spark)
    try:
        lake.build("versions handed over")
    finally:
        for key in (VERSIONS_CONF, HANDED_CONF):
            lake.spark.conf.unset(key)

    assert _slice_bounds(lake)["to"] == handed_bronze, "the slice did not stop at the handed bronze version"
    silver_now = support.expected_silver(lake.rows[: -len(second)], ACTIVE)
    assert set(silver_now) == {row["event_id"] for row in lake.table(f"silver.silver_{ACTIVE}")}
    assert_gold_exact(lake, ACTIVE, silver_now)
    lake.build("the rest, nothing handed")
    assert_gold_exact(lake, ACTIVE, assert_silver_exact(lake, ACTIVE))


def test_facts_handed_over_by_the_refresh_are_read_as_handed(
    lake: Lake, writer: support.BronzeWriter
) -> None:
    # After a cycle's slice, `ingest refresh` reads once what the games' models would ask Spark
    # one by one (ingest/ops/cycle_facts.py): the slice's bounds and each game's event dates and
    # activity, and, from gold's files, the gold marks. Built on them, silver and gold are exact.
    # A gold model reads silver's change feed after the handed mark: handed a mark at silver's
    # newest version, it reads none of silver's new rows, and its own mark stays where it was.
    silver, player_agg = f"silver.silver_{ACTIVE}", f"gold.gold_{ACTIVE}_player_agg"
    tables_dir = _table_dir(lake, silver).parent.parent

    def land() -> list[dict[str, Any]]:
        batch = [writer.event(ACTIVE, 4, NOW - timedelta(minutes=1), gamers=6) for _ in range(10)]
        lake.land(batch, support.schema_for(4))
        lake.build("the slice", "stg_bronze__new_events")
        return batch

    batch = land()
    readers = read_slice_readers(lake.spark)
    # silver's anti-join reads only the rows between the batch's earliest and latest event times
    times = [f"{row['event_timestamp']:%Y-%m-%d %H:%M:%S.%f}" for row in batch]
    bound = f"loaded.event_at between timestamp '{min(times)}' and timestamp '{max(times)}'"
    assert json.loads(readers.handed())["dates"][ACTIVE]["event_at"] == [min(times), max(times)]
    with handing_cycle_facts(lake.spark, tables_dir, readers, lock_held=True):
        handed = json.loads(lake.spark.conf.get(GOLD_MARKS_CONF))[player_agg]
        assert handed == max(_stored_silver_versions(lake, player_agg))
        lake.dbt(*after_slice_args(build_selection(readers)))  # the cycle's second invocation
    assert lake.spark.conf.get(GOLD_MARKS_CONF) == "{}", "the facts outlived the build"
    assert bound in _compiled(lake, f"silver_{ACTIVE}"), "the anti-join was not bounded by the batch's times"
    assert_gold_exact(lake, ACTIVE, assert_silver_exact(lake, ACTIVE))

    held = _stored_silver_versions(lake, player_agg)
    land()
    lake.build("silver on its own", f"silver_{ACTIVE}", "silver_quarantine")
    lake.spark.conf.set(GOLD_MARKS_CONF, json.dumps({player_agg: _version(lake, silver)}))
    try:
        lake.build("gold handed a mark at silver's newest version", f"gold_{ACTIVE}_player_agg")
    finally:
        lake.spark.conf.unset(GOLD_MARKS_CONF)
    assert _stored_silver_versions(lake, player_agg) == held, "the handed mark was not the one read"
    lake.build("gold asking Spark for its mark", f"gold_{ACTIVE}_player_agg", f"gold_{ACTIVE}_daily_active")
    assert_gold_exact(lake, ACTIVE, assert_silver_exact(lake, ACTIVE))


def _refresh_steps(
    lake: Lake, callbacks: tuple[Callable[[Any], None], ...] = ()
) -> tuple[BronzeWatch, list[Any], Callable[..., Any]]:
    """The refresh's watch on bronze and the readers' marks, and a dbt invoke that keeps each
    step's result in the list, for a cycle run as `ingest refresh` runs it."""
    watch = BronzeWatch(lake.bronze_path, ReaderMarks(_table_dir(lake, f"silver.silver_{ACTIVE}").parent))
    steps: list[Any] = []

    def invoke(*args: str) -> Any:
        steps.append(lake.dbt(*args, callbacks=callbacks))
        return steps[-1]

    return watch, steps, invoke


def test_a_cycle_builds_gold_on_threads_after_silver_on_one(lake: Lake, writer: support.BronzeWriter) -> None:
    # `ingest refresh --gold-threads 2` splits a cycle's second step: silver on one thread (a
    # reader's mark is a conf of the shared session), then gold on two in the same session. dbt
    # takes the threads for gold alone, and the gold step runs no check of silver again. As the
    # refresh does, the marks and versions are handed over before the cycle, and silver's new
    # versions again before the gold step, without the marks, which gold does not read: gold
    # reads silver as of the version it is handed, so handed the one before silver's insert, it
    # would hold none of this cycle's rows (and read files an upkeep with --vacuum-hours 0 has
    # deleted).
    watch, steps, invoke = _refresh_steps(lake)
    try:
        batch = [writer.event(ACTIVE, 4, NOW - timedelta(minutes=1), gamers=6) for _ in range(10)]
        lake.land(batch, support.schema_for(4))
        watch.version()
        watch.hand_versions_to(lake.spark)
        lake.build("gold on threads: the slice", "stg_bronze__new_events")
        selection = build_selection(read_slice_readers(lake.spark))
        assert build_after_slice(
            invoke,
            selection,
            [],
            gold_threads=2,
            before_gold=lambda: watch.hand_table_versions_to(lake.spark),
        )
        # gold holds this cycle's silver rows, not only the tests' before it
        assert_gold_exact(lake, ACTIVE, assert_silver_exact(lake, ACTIVE))
    finally:
        for key in (VERSIONS_CONF, HANDED_CONF):
            lake.spark.conf.unset(key)
    silver_step, gold_step = (
        [r.node.name for r in step.result.results if r.node.resource_type in ("model", "test")]
        for step in steps[-2:]
    )
    assert f"silver_{ACTIVE}" in silver_step and not any(name.startswith("gold_") for name in silver_step)
    assert {f"gold_{ACTIVE}_player_agg", f"gold_{ACTIVE}_daily_active"} <= set(gold_step)
    assert all(name.startswith("gold_") for name in gold_step), gold_step
    assert steps[-1].result.args["threads"] == 2


def test_each_dbt_thread_given_a_session_of_its_own_keeps_its_conf(lake: Lake) -> None:
    # ingest/ops/thread_sessions.py: the thread that opened them runs on the base session; any
    # other thread on a clone of it, taken at its first statement with the base's conf as it was
    # then, whose own settings stay its own while another thread sets the same conf.
    key = "spark.gamelake.test_thread_conf"
    lake.spark.conf.set(key, "handed")
    seen: dict[str, list[str]] = {}
    both_set = threading.Barrier(2)

    def thread(name: str) -> None:
        session = sessions.session()
        seen[name] = [session.conf.get(key)]
        session.sql(f"set {key}={name}")
        both_set.wait(timeout=60)
        seen[name].append(session.sql(f"set {key}").first()[1])

    try:
        with session_per_thread(lake.spark) as sessions:
            assert sessions.session() is lake.spark
            assert lake.spark.conf.get(SESSION_PER_THREAD_CONF) == "true"
            workers = [threading.Thread(target=thread, args=(name,)) for name in ("one", "two")]
            for worker in workers:
                worker.start()
            for worker in workers:
                worker.join(timeout=120)
        assert seen == {"one": ["handed", "one"], "two": ["handed", "two"]}
        assert lake.spark.conf.get(key) == "handed", "a thread's setting reached the base session"
        assert lake.spark.conf.get(SESSION_PER_THREAD_CONF, None) is None
    finally:
        lake.spark.conf.unset(key)


def test_a_cycle_builds_silver_on_threads_each_on_a_session_of_its_own(
    lake: Lake, writer: support.BronzeWriter
) -> None:
    # `ingest refresh --silver-threads 2`: silver's step on two dbt threads, each on a Spark
    # session of its own, where the shared session refuses them (the test above it). Every
    # reader's mark, a conf of its thread's session, rides in its own data commit, naming its own
    # table and the slice it read; the rows are exact, and the base session keeps no mark. The
    # silver check, on one of the threads, finds the batch each build recorded, whichever thread
    # built it, rather than asking a table's history and change feed.
    games = sorted(game for game, active in lake.seeded.items() if active)
    assert len(games) >= 3, games
    check_statements: list[str] = []

    def heard(event: Any) -> None:
        if event.info.name != "SQLQuery":
            return
        if event.data.node_info.unique_id == f"test.gamelake.{SILVER_CHECK}":
            check_statements.append(event.data.sql)

    watch, steps, invoke = _refresh_steps(lake, callbacks=(heard,))
    try:
        for cycle in range(2):
            at = NOW - timedelta(minutes=1)
            batch = [writer.event(game, 4, at, gamers=6) for game in games for _ in range(8)]
            batch.append(writer.event(ACTIVE, 4, at, event_timestamp=None))  # the quarantine's too
            lake.land(batch, support.schema_for(4))
            watch.version()
            watch.hand_versions_to(lake.spark)
            lake.build(f"cycle {cycle}: the slice", "stg_bronze__new_events")
            readers = read_slice_readers(lake.spark)
            selection = build_selection(readers)
            assert len(selection) == len(games) + 1, selection
            slice_to = int(readers.bounds[1]) if readers.bounds else None  # the slice's upper bound
            assert build_after_slice(
                invoke,
                selection,
                [],
                gold_threads=2,
                before_gold=lambda: watch.hand_table_versions_to(lake.spark),
                silver_threads=2,
                silver_sessions=lambda: session_per_thread(lake.spark),
            )
            for reader in [f"silver.silver_{game}" for game in games] + ["silver.silver_quarantine"]:
                mark = committed_mark(_delta_log(lake, reader).history(1), reader)
                assert mark is not None and mark.version == slice_to, f"{reader}: {mark}"
            for game in games:
                assert_gold_exact(lake, game, assert_silver_exact(lake, game))
    finally:
        for key in (VERSIONS_CONF, HANDED_CONF):
            lake.spark.conf.unset(key)
    silver_step = steps[-2].result
    assert silver_step.args["threads"] == 2
    assert check_statements, "the silver check ran no statement"
    asked = [sql for sql in check_statements if "describe history" in sql or "table_changes(" in sql]
    assert not asked, f"the silver check asked for what a build had recorded: {asked[:2]}"
    assert len({r.thread_id for r in silver_step.results if r.node.resource_type == "model"}) == 2
    metadata = lake.spark.conf.get("spark.databricks.delta.commitInfo.userMetadata", None)
    assert not metadata, f"the base session kept a mark: {metadata}"


def test_daily_active_adds_the_new_players_and_recounts_only_the_days_a_batch_player_is_late_on(
    lake: Lake, writer: support.BronzeWriter
) -> None:
    # Handed player_agg's version from before the cycle, daily_active adds to a day the players
    # whose stored last event (last purchase) falls on an earlier day, and counts none whose falls
    # on the day; a day where a player of the batch is late (stored last event on a later day) it
    # recounts from silver. The cycles mix new, counted and late players across days, a retry
    # among them; every count must be exact.
    # The cycles run as the refresh runs them, with a gold step of its own (its default) and on
    # one invocation. Every batch day here is before player_agg's latest day (the tests before
    # land now), as today's are when one console's clock runs ahead: before a gold step of its
    # own the refresh judges the batch's players one by one, and the statement recounts only the
    # days where one is late, named as literals, and adds the others, reading player_agg. On one
    # invocation, the days silver's build recorded are judged by player_agg's latest day alone.
    silver, daily_active = f"silver.silver_{ACTIVE}", f"gold_{ACTIVE}_daily_active"
    tables_dir = _table_dir(lake, silver).parent.parent
    watch = BronzeWatch(lake.bronze_path, ReaderMarks(_table_dir(lake, silver).parent))
    day = datetime.combine(NOW.date() - timedelta(days=3), datetime.min.time())
    landed_at = NOW - timedelta(seconds=30)

    def event(gamer: str, days: int, hour: int, kind: str = "match_start") -> dict[str, Any]:
        at = day + timedelta(days=days, hours=hour)
        return writer.event(ACTIVE, 4, landed_at, gamer_id=gamer, event_type=kind, event_timestamp=at)

    def cycle(
        rows: list[dict[str, Any]], recounted: list[int], gold_threads: int = 2, adds: bool = True
    ) -> None:
        lake.land(rows, support.schema_for(4))
        watch.version()
        watch.hand_versions_to(lake.spark)
        try:
            lake.build("the slice", "stg_bronze__new_events")
            readers = read_slice_readers(lake.spark)
            with handing_cycle_facts(lake.spark, tables_dir, readers, lock_held=True) as hand_gold_step:

                def before_gold() -> None:
                    watch.hand_table_versions_to(lake.spark)
                    hand_gold_step()

                assert build_after_slice(lake.dbt, build_selection(readers), [], gold_threads, before_gold)
        finally:
            for key in (VERSIONS_CONF, HANDED_CONF):
                lake.spark.conf.unset(key)
        compiled = _compiled(lake, daily_active)
        assert "from batch_days)" not in compiled, f"the batch's days were not foreseen:\n{compiled}"
        assert (f"gold_{ACTIVE}_player_agg version as of" in compiled) is adds, compiled
        assert ("recounted_days" in compiled) is bool(recounted), f"late on {recounted}:\n{compiled}"
        late_days = ", ".join(f"date '{day + timedelta(days=n):%Y-%m-%d}'" for n in recounted)
        if recounted:
            assert f"event_date in ({late_days})" in compiled, compiled
        if recounted and adds:
            assert f"event_date not in ({late_days})" in compiled, compiled
        assert_gold_exact(lake, ACTIVE, assert_silver_exact(lake, ACTIVE))

    players = lake.table(f"gold.gold_{ACTIVE}_player_agg")
    latest = max(row["last_event_at"] for row in players)  # after `day` + 2: the tests before land now
    counted = next(row["gamer_id"] for row in players if row["last_event_at"].date() == latest.date())
    first = [event("da-early", 1, 9), event("da-late", 1, 10, "purchase"), event("da-payer", 0, 8)]
    cycle(first, recounted=[])  # new players only: days before the latest, and no recount
    cycle(
        [
            event("da-early", 1, 11),  # already counted on day 1
            event("da-new", 1, 12),  # new to day 1
            event("da-late", 0, 13),  # late: stored last event on day 1, none before on day 0
            event("da-payer", 0, 14, "purchase"),  # active on day 0 already, a payer new to it
            event("da-late", 1, 15, "purchase"),  # paid on day 1 already
            writer.retry(
                first[0], landed_at + timedelta(seconds=1)
            ),  # silver holds it: counted nowhere again
        ],
        recounted=[0],
    )
    cycle(
        [
            event("da-late", 2, 9, "purchase"),  # last event and last purchase on an earlier day
            event("da-early", 0, 16, "purchase"),  # late, and its first purchase
            event("da-late", 0, 20),  # late, on a day it was counted on already
            event("da-fresh", 2, 10, "purchase"),
        ],
        recounted=[0],
    )
    cycle([event("da-fresh", 1, 7), event("da-new", 0, 22)], recounted=[0, 1], adds=False)  # all late
    cycle(  # on player_agg's latest day, on one invocation
        [
            writer.event(ACTIVE, 4, landed_at, gamer_id=gamer, event_type=kind, event_timestamp=latest)
            for gamer, kind in [
                ("da-early", "purchase"),  # new to the day, and a payer new to it
                ("da-today-1", "match_start"),  # new to the game
                (counted, "match_start"),  # counted on the day already
            ]
        ],
        recounted=[],
        gold_threads=1,
    )
    # a batch on both sides of player_agg's latest day, with a late player before it
    cycle(
        [
            event("da-mixed", 1, 17),  # new to the game, on a day before the latest: added
            event("da-late", 1, 18),  # late: stored last event on day 2
            writer.event(ACTIVE, 4, landed_at, gamer_id="da-mixed", event_timestamp=latest),
            writer.event(
                ACTIVE, 4, landed_at, gamer_id="da-today-1", event_type="purchase", event_timestamp=latest
            ),
        ],
        recounted=[1],
    )
    # on one invocation, a day before player_agg's latest is recounted, though no player is late
    cycle([event("da-one-step", 2, 11)], recounted=[2], gold_threads=1, adds=False)


def test_a_player_agg_from_before_last_purchase_at_gets_it_for_every_player(
    lake: Lake, writer: support.BronzeWriter
) -> None:
    # A lakehouse built before player_agg kept last_purchase_at: the refresh hands no mark for
    # that table (its build must ask Spark, and learn the columns), its next build fills the
    # column for every player from silver, and the cycle after adds daily_active's new players.
    silver, player_agg = f"silver.silver_{ACTIVE}", f"gold.gold_{ACTIVE}_player_agg"
    tables_dir = _table_dir(lake, silver).parent.parent
    # nor did it keep file statistics on named columns (ingest/ops/stats_columns.py), which
    # Delta would hold against a schema without one of them
    lake.spark.sql(f"alter table {player_agg} unset tblproperties if exists ('{STATS_COLUMNS}')")
    old_rows = lake.spark.table(player_agg).drop("last_purchase_at")
    old_rows.write.format("delta").mode("overwrite").option("overwriteSchema", "true").saveAsTable(player_agg)
    assert "last_purchase_at" not in lake.columns(player_agg)

    watch = BronzeWatch(lake.bronze_path, ReaderMarks(_table_dir(lake, silver).parent))
    # on player_agg's latest day, so that daily_active adds the batch (reading player_agg) rather
    # than recounting a late day: the tests before land events up to about NOW + 75 min, which
    # after 22:45 UTC is tomorrow
    latest = max(row["last_event_at"] for row in lake.table(player_agg))
    for cycle in range(2):
        batch = [
            writer.event(ACTIVE, 4, NOW - timedelta(minutes=1), gamers=6, event_timestamp=latest)
            for _ in range(20)
        ]
        lake.land(batch, support.schema_for(4))
        watch.version()
        watch.hand_versions_to(lake.spark)  # as the refresh does: daily_active's days are handed
        try:
            lake.build(f"cycle {cycle}: the slice", "stg_bronze__new_events")
            readers = read_slice_readers(lake.spark)
            with handing_cycle_facts(lake.spark, tables_dir, readers, lock_held=True):
                handed = json.loads(lake.spark.conf.get(GOLD_MARKS_CONF))
                assert (player_agg in handed) is (cycle == 1), handed
                lake.dbt(*after_slice_args(build_selection(readers)))
        finally:
            for key in (VERSIONS_CONF, HANDED_CONF):
                lake.spark.conf.unset(key)
        # every player's last purchase, touched by this batch or not (assert_gold_exact)
        assert_gold_exact(lake, ACTIVE, assert_silver_exact(lake, ACTIVE))
    assert f"gold_{ACTIVE}_player_agg version as of" in _compiled(lake, f"gold_{ACTIVE}_daily_active")


def test_a_daily_active_without_its_mark_is_counted_again_exactly(
    lake: Lake, writer: support.BronzeWriter
) -> None:
    # A daily_active built before gold kept its mark (no silver_version) counts every day from
    # silver at its next build, and adds each stored day's change to it: a stored day off by any
    # amount ends exact.
    daily_active = f"gold.gold_{ACTIVE}_daily_active"
    old_rows = lake.spark.table(daily_active).drop("silver_version")
    old_rows = old_rows.withColumn("active_players", old_rows["active_players"] + 3)
    old_rows.write.format("delta").mode("overwrite").option("overwriteSchema", "true").saveAsTable(
        daily_active
    )
    lake.land(
        [writer.event(ACTIVE, 4, NOW - timedelta(minutes=1), gamers=6) for _ in range(10)],
        support.schema_for(4),
    )
    lake.build("daily_active without its mark")
    assert "silver_version" in lake.columns(daily_active)
    assert_gold_exact(lake, ACTIVE, assert_silver_exact(lake, ACTIVE))


def test_gold_behind_silvers_log_recounts_from_a_snapshot_exactly(
    lake: Lake, writer: support.BronzeWriter
) -> None:
    # Silver keeps a few hours of Delta log (ingest refresh --log-hours). A gold table whose mark's
    # next commit a cleanup has removed cannot read the change feed after it: handed a null mark by
    # the refresh, or finding the commit gone from silver's history when it asks Spark, it counts
    # from a pinned snapshot of silver instead, and ends exact.
    silver, player_agg = f"silver.silver_{ACTIVE}", f"gold.gold_{ACTIVE}_player_agg"
    tables_dir = _table_dir(lake, silver).parent.parent

    def land() -> None:
        batch = [writer.event(ACTIVE, 4, NOW - timedelta(minutes=1), gamers=6) for _ in range(5)]
        lake.land(batch, support.schema_for(4))
        lake.build("the slice", "stg_bronze__new_events")

    def silver_ahead_past_its_log() -> None:
        mark = max(_stored_silver_versions(lake, player_agg))
        for _ in range(2):
            land()
            lake.build("silver on its own", f"silver_{ACTIVE}", "silver_quarantine")
        _clean_log(lake, silver)
        assert not (_table_dir(lake, silver) / "_delta_log" / f"{mark + 1:020d}.json").exists()

    silver_ahead_past_its_log()
    land()
    readers = read_slice_readers(lake.spark)
    with handing_cycle_facts(lake.spark, tables_dir, readers, lock_held=True):
        assert json.loads(lake.spark.conf.get(GOLD_MARKS_CONF))[player_agg] is None
        lake.dbt(*after_slice_args(build_selection(readers)))
    assert_gold_exact(lake, ACTIVE, assert_silver_exact(lake, ACTIVE))
    for gold in (f"gold_{ACTIVE}_player_agg", f"gold_{ACTIVE}_daily_active"):
        assert "table_changes" not in _compiled(lake, gold), f"{gold} read a change feed that is gone"

    silver_ahead_past_its_log()
    lake.build("gold asking Spark, behind silver's log")
    assert_gold_exact(lake, ACTIVE, assert_silver_exact(lake, ACTIVE))
    assert "table_changes" not in _compiled(lake, f"gold_{ACTIVE}_player_agg")


def _clean_log(lake: Lake, table: str) -> None:
    """A checkpoint and cleanup of ``table``'s log with no hours kept: every commit before its
    newest goes, as a refresh's upkeep removes those older than --log-hours."""
    keys = ("delta.logRetentionDuration", "delta.deletedFileRetentionDuration")
    held = {key: lake.spark.sql(f"show tblproperties {table} ('{key}')").first()[1] for key in keys}

    def set_properties(values: dict[str, str]) -> None:
        settings = ", ".join(f"'{key}' = '{value}'" for key, value in values.items())
        lake.spark.sql(f"alter table {table} set tblproperties ({settings})")

    set_properties(dict.fromkeys(keys, "interval 0 hours"))
    log = _delta_log(lake, table)
    log.create_checkpoint()
    log.cleanup_metadata()
    set_properties(held)


def test_the_silver_check_reads_the_dates_its_build_recorded(
    lake: Lake, writer: support.BronzeWriter
) -> None:
    # A silver build records its batch's event dates for the silver check of the same invocation,
    # which would otherwise ask the table's history and change feed, two Spark jobs a game. A
    # producer retry of a loaded event adds no row, but its date is in the batch, so the check
    # reads that partition too: the record holds every date the insert can have written. A later
    # invocation (`dbt test`) does not trust it, and reads the dates of the latest insert's changes.
    loaded = {row["event_id"] for row in lake.table(f"silver.silver_{ACTIVE}")}
    original = next(
        r for r in lake.rows if r["event_id"] in loaded and r["event_date"] < (NOW - timedelta(days=2)).date()
    )
    lake.land([writer.retry(original, NOW)], support.schema_for(original["_schema_id"]))
    fresh = writer.event(ACTIVE, 4, NOW - timedelta(minutes=1))
    lake.land([fresh], support.schema_for(4))

    lake.build("a retry of a loaded event and a new one")
    assert_gold_exact(lake, ACTIVE, assert_silver_exact(lake, ACTIVE))
    assert _checked_dates(lake, ACTIVE) == {original["event_date"], fresh["event_date"]}
    # and in them only the rows between the batch's event times, the retry's and the new one's
    assert _checked_times(lake, ACTIVE) == (original["event_timestamp"], fresh["event_timestamp"])

    lake.dbt("test", "--select", "assert_silver_new_rows_valid")
    assert _checked_dates(lake, ACTIVE) == {fresh["event_date"]}
    assert _checked_times(lake, ACTIVE) == (fresh["event_timestamp"], fresh["event_timestamp"])


def test_dbt_test_after_the_deleted_file_retention_checks_the_whole_table(lake: Lake) -> None:
    # Delta refuses to read a change feed version older than the table's
    # delta.deletedFileRetentionDuration (its files may be vacuumed): `dbt test` the morning after
    # a build failed on it. Now such a table is checked whole. A retention of one second stands
    # for the hours, and the change of property is a commit, but not a write. It is written as an
    # operator may write it, without `interval` (the project's own 'interval 6 hours' is read in the
    # test before this one): the check once read such a value as Delta's week, and was refused.
    table = f"silver.silver_{ACTIVE}"
    key = "delta.deletedFileRetentionDuration"
    kept = lake.spark.sql(f"show tblproperties {table} ('{key}')").first()["value"]
    lake.spark.sql(f"alter table {table} set tblproperties ('{key}' = '1 second')")
    try:
        time.sleep(2)
        lake.dbt("test", "--select", "assert_silver_new_rows_valid")
    finally:
        lake.spark.sql(f"alter table {table} set tblproperties ('{key}' = '{kept}')")
    compiled = _compiled(lake, "assert_silver_new_rows_valid")
    # the whole table; the test before this one shows a table within its retention read by window
    assert re.search(rf"from {table}\s+where true\s", compiled), compiled


def _checked_dates(lake: Lake, game: str) -> set[date]:
    """The event_date partitions of ``game``'s silver that the latest silver check compiled to."""
    compiled = _compiled(lake, "assert_silver_new_rows_valid")
    where = re.search(rf"from silver\.silver_{game}\s+where (.*)", compiled)
    assert where, compiled
    return {date.fromisoformat(day) for day in re.findall(r"date '([0-9-]+)'", where.group(1))}


def _checked_times(lake: Lake, game: str) -> tuple[datetime, ...]:
    """The earliest and latest event time the latest silver check of ``game`` read between."""
    compiled = _compiled(lake, "assert_silver_new_rows_valid")
    where = re.search(rf"from silver\.silver_{game}\s+where (.*)", compiled)
    assert where, compiled
    bound = re.search(r"event_at between timestamp '([^']+)' and timestamp '([^']+)'", where.group(1))
    assert bound, where.group(1)
    return tuple(datetime.fromisoformat(at) for at in bound.groups())


def _stored_silver_versions(lake: Lake, gold: str) -> list[int]:
    return sorted({row["silver_version"] for row in lake.table(gold)})


def _slice_bounds(lake: Lake) -> dict[str, Any]:
    row = lake.spark.sql(
        "select slice_from_version, slice_to_version, slice_reader_marks"
        " from bronze.stg_bronze__new_events where bronze_version is null"
    ).first()
    return {"from": row[0], "to": row[1], "marks": json.loads(row[2])}


def _version(lake: Lake, table: str) -> int:
    return int(lake.spark.sql(f"describe history {table} limit 1").first()["version"])


def test_a_game_without_new_rows_is_read_up_to_the_slice_without_a_build(
    lake: Lake, writer: support.BronzeWriter
) -> None:
    # Two slices built on their own, as `ingest refresh` builds each cycle's slice first and then
    # only the games with rows in it. A game with rows keeps its mark until its own build commits;
    # a game without rows is carried up to the slice it had nothing in, with no build of its own.
    quiet = (PAUSED, NEW_GAME)
    lake.land(
        [writer.event(ACTIVE, 4, NOW - timedelta(minutes=2), gamers=6) for _ in range(10)],
        support.schema_for(4),
    )
    lake.build("slice only", "stg_bronze__new_events")
    one = _slice_bounds(lake)
    lake.land(
        [writer.event(ACTIVE, 4, NOW - timedelta(minutes=1), gamers=6) for _ in range(10)],
        support.schema_for(4),
    )
    lake.build("slice only, again", "stg_bronze__new_events")
    two = _slice_bounds(lake)

    assert {two["marks"][f"silver_{game}"] for game in quiet} == {one["to"]}
    assert two["marks"][f"silver_{ACTIVE}"] == one["marks"][f"silver_{ACTIVE}"] < one["to"]
    assert two["from"] == one["marks"][f"silver_{ACTIVE}"] + 1, (
        "rows the active game has not read left the slice"
    )

    quiet_versions = {game: _version(lake, f"silver.silver_{game}") for game in quiet}
    lake.build("the games with rows", f"silver_{ACTIVE}+", "silver_quarantine+")
    assert_gold_exact(lake, ACTIVE, assert_silver_exact(lake, ACTIVE))
    assert {game: _version(lake, f"silver.silver_{game}") for game in quiet} == quiet_versions
    # the all-games checks cover the games this build built, not every game
    checked = _compiled(lake, "assert_silver_new_rows_valid")
    assert f"silver.silver_{ACTIVE}" in checked, checked
    assert not [game for game in quiet if f"silver.silver_{game}" in checked], checked

    lake.build("the next slice", "stg_bronze__new_events")
    three = _slice_bounds(lake)
    assert three["from"] == two["to"] + 1, "a game without rows held the slice back"
    assert set(three["marks"].values()) == {two["to"]}


def test_a_second_build_waits_for_the_lock(lake: Lake, writer: support.BronzeWriter) -> None:
    lake.land([writer.event(ACTIVE, 4, NOW - timedelta(seconds=30))], support.schema_for(4))
    silver_before = len(lake.table(f"silver.silver_{ACTIVE}"))
    lake.spark.sql(
        "insert into silver.gamelake_build_lock values ('build', 'other-build', current_timestamp())"
    )

    refused = lake.dbt("build", expect_success=False, hooks_lock=True)

    assert "another dbt build (invocation other-build" in str(refused.exception or refused.result)
    assert len(lake.table(f"silver.silver_{ACTIVE}")) == silver_before, "a refused build wrote silver"
    assert [row["holder"] for row in lake.table("silver.gamelake_build_lock")] == ["other-build"]

    lake.dbt("run-operation", "gamelake_release_build_lock", "--args", "{force: true}")
    built = lake.build("build after the lock was released", hooks_lock=True)
    assert_gold_exact(lake, ACTIVE, assert_silver_exact(lake, ACTIVE))
    assert lake.table("silver.gamelake_build_lock") == [], "a build left its lock behind"

    # the whole-table audit is not part of a plain build, and passes when asked for
    audit_tests = {
        "assert_player_agg_matches_silver",
        "assert_daily_active_matches_silver",
        "unique_stg_bronze__game_events_bronze_row_key",
    }
    assert not audit_tests & {r.node.name for r in built.result.results}
    audit = lake.dbt("build", "--select", "tag:audit")
    assert audit_tests <= {r.node.name for r in audit.result.results}
    # the all-games silver check reads the partitions each game's latest build loaded, not history
    compiled = _compiled(lake, "assert_silver_new_rows_valid")
    assert re.search(rf"from silver.silver_{ACTIVE}\s+where event_date in \(date '", compiled), compiled
    game_tests = [
        r.node.name for r in built.result.results if r.node.resource_type == "test" and ACTIVE in r.node.name
    ]
    assert not game_tests, f"per-game tests are back: {game_tests}"


def _compiled(lake: Lake, name: str) -> str:
    """The SQL dbt last compiled for node ``name``."""
    return next((lake.project / "target" / "compiled").rglob(f"{name}.sql")).read_text()


# Last in the module: it changes what silver holds beyond what lake.rows predicts.
def test_quarantined_rows_are_readmitted_once_after_a_rule_is_relaxed(
    lake: Lake, writer: support.BronzeWriter
) -> None:
    ahead = writer.event(ACTIVE, 4, NOW, event_timestamp=NOW + timedelta(days=2))  # past the 1440 min
    lake.land([ahead], support.schema_for(4))
    lake.build("build with an event two days ahead")
    key = f"{ahead['_kafka_topic']}:{ahead['_kafka_partition']}:{ahead['_kafka_offset']}"
    quarantine = {row["quarantine_id"]: row for row in lake.table("silver.silver_quarantine")}
    assert quarantine[key]["reasons"] == ["not_from_the_future"]
    assert ahead["event_id"] not in {r["event_id"] for r in lake.table(f"silver.silver_{ACTIVE}")}
    new_game_rows = {k for k, row in quarantine.items() if row["game_slug"] == NEW_GAME}
    assert new_game_rows, "the new game's rows from before it was in the seed are quarantined"

    relaxed = ["--vars", "{gamelake_max_future_minutes: 4320}"]  # the rule relaxed to three days
    silver_before = len(lake.table(f"silver.silver_{ACTIVE}"))
    lake.dbt("run-operation", "gamelake_readmit_quarantine", "--args", "{dry_run: true}", *relaxed)
    assert len(lake.table(f"silver.silver_{ACTIVE}")) == silver_before, "a dry run wrote silver"

    for _ in range(2):  # a second run re-admits nothing twice
        lake.dbt("run-operation", "gamelake_readmit_quarantine", *relaxed)
        silver = lake.table(f"silver.silver_{ACTIVE}")
        assert len(silver) == silver_before + 1
        assert [r["kafka_offset"] for r in silver if r["event_id"] == ahead["event_id"]] == [
            ahead["_kafka_offset"]
        ]

    quarantine = {row["quarantine_id"]: row for row in lake.table("silver.silver_quarantine")}
    assert quarantine[key]["readmitted_to"] == f"silver_{ACTIVE}" and quarantine[key]["readmitted_at"]
    # the new game's first build read them from bronze; re-admission records it, adding no copy
    assert {quarantine[k]["readmitted_to"] for k in new_game_rows} == {f"silver_{NEW_GAME}"}
    new_game_silver = [r["event_id"] for r in lake.table(f"silver.silver_{NEW_GAME}")]
    assert len(new_game_silver) == len(set(new_game_silver))
    # rows that still break a rule stay quarantined, untouched
    still = [row for row in quarantine.values() if row["game_slug"] == ACTIVE and row["quarantine_id"] != key]
    assert still and all(row["readmitted_at"] is None for row in still)

    lake.build("gold takes the re-admitted row")
    gamer = [r for r in lake.table(f"gold.gold_{ACTIVE}_player_agg") if r["gamer_id"] == ahead["gamer_id"]]
    silver_of_gamer = [r for r in lake.table(f"silver.silver_{ACTIVE}") if r["gamer_id"] == ahead["gamer_id"]]
    assert gamer[0]["event_count"] == len(silver_of_gamer)
    lake.dbt("build", "--select", "tag:audit")  # gold equals a recompute from silver

    # a game that is not active is refused, by name (dbt logs a run-operation's error: listen to it)
    from dbt.cli.main import dbtRunner

    said: list[str] = []
    where = ["--project-dir", str(lake.project), "--profiles-dir", str(lake.project / "profiles")]
    refused = dbtRunner(callbacks=[lambda event: said.append(event.info.msg)]).invoke(
        ["run-operation", "gamelake_readmit_quarantine", "--args", f"{{game: {INACTIVE}}}", *where]
    )
    assert not refused.success
    assert any(f"game '{INACTIVE}' is not an active game of seeds/games.csv" in line for line in said)


# After the last build of the module: it writes bad rows straight into silver and gold.
def test_the_all_games_checks_name_the_game_and_the_broken_rule(lake: Lake) -> None:
    from pyspark.sql import functions as F

    original = lake.spark.table(f"silver.silver_{ACTIVE}").limit(1).cache()
    duplicate_id = original.first()["event_id"]
    no_gamer = original.withColumn("event_id", F.lit("no-gamer")).withColumn("gamer_id", F.lit(None))
    odd_type = original.withColumn("event_id", F.lit("odd-type")).withColumn("event_type", F.lit("teleport"))
    no_game = original.withColumn("event_id", F.lit("no-game")).withColumn("game_slug", F.lit("ghost_game"))
    bad = original.unionByName(no_gamer).unionByName(odd_type).unionByName(no_game)
    bad.write.insertInto(f"silver.silver_{ACTIVE}")
    gold = lake.spark.table(f"gold.gold_{ACTIVE}_player_agg").limit(1).cache()
    duplicate_gamer = gold.first()["gamer_id"]
    # a second copy of one player's row, and a player whose row names no game of the seed
    ghost = gold.withColumn("gamer_id", F.lit("ghost-player")).withColumn("game_slug", F.lit("ghost_game"))
    gold.unionByName(ghost).write.insertInto(f"gold.gold_{ACTIVE}_player_agg")

    for test, expected in (
        (
            "assert_silver_new_rows_valid",
            {
                (ACTIVE, "event_id is unique", duplicate_id),
                (ACTIVE, "gamer_id is not null", "no-gamer"),
                (ACTIVE, "event_type is a known event type", "odd-type"),
                (ACTIVE, "game_slug is in the games seed", "no-game"),
            },
        ),
        (
            "assert_gold_rows_valid",
            {
                (ACTIVE, "player_agg key is unique", duplicate_gamer),
                (ACTIVE, "game_slug is in the games seed", "ghost_game"),
            },
        ),
    ):
        failed = lake.dbt("test", "--select", test, expect_success=False)
        assert not failed.success, f"{test} passed on bad rows"
        rows = lake.spark.sql(_compiled(lake, test)).collect()
        failures = [(r["model_game"], r["failed_check"], r["failed_value"]) for r in rows]
        assert sorted(failures) == sorted(expected), "each failure once, and only these"


# After the checks' test: silver_ACTIVE holds a row without a gamer_id, written around dbt.
def test_a_gold_build_refuses_a_source_row_without_its_key(lake: Lake) -> None:
    """The refresh leaves assert_gold_rows_valid to dbt build and dbt test; gold's write itself
    refuses a row without its key, naming the table, and commits nothing."""
    table = f"gold_{ACTIVE}_player_agg"
    history = f"describe history gold.{table}"
    before = lake.spark.sql(history).first()["version"]
    refused = lake.dbt("run", "--select", table, expect_success=False)
    said = " ".join(str(r.message) for r in refused.result.results)
    assert f"{table}: a source row without its gamer_id" in said, said[-2000:]
    assert lake.spark.sql(history).first()["version"] == before, "the refused build committed"
    assert all(row["gamer_id"] is not None for row in lake.table(f"gold.{table}"))


def test_a_silver_build_refuses_a_row_its_relaxed_rule_let_through(
    lake: Lake, writer: support.BronzeWriter
) -> None:
    """The refresh leaves assert_silver_new_rows_valid to dbt build and dbt test; silver's write
    itself refuses a row the check would fail, naming the table and the fix, and commits nothing.
    Once the rule holds again the row goes to quarantine: nothing landed is lost."""
    rules = lake.project / "macros" / "medallion" / "gamelake_expectations.sql"
    kept = rules.read_text()
    drop = "{'name': 'has_gamer_id', 'action': 'drop'"
    assert drop in kept
    table = f"silver_{ACTIVE}"
    history = f"describe history silver.{table}"
    before = lake.spark.sql(history).first()["version"]
    nobody = writer.event(ACTIVE, 4, NOW, gamer_id=None)
    lake.land([nobody], support.schema_for(4))
    refusal = f"{table}: a row without its gamer_id; keep its expectation a drop or fail rule"
    relaxed = kept.replace(drop, drop.replace("'drop'", "'warn'"))
    try:
        rules.write_text(relaxed)
        refused = lake.dbt("run", "--select", "stg_bronze__new_events", table, expect_success=False)
    finally:
        rules.write_text(kept)
    said = " ".join(str(r.message) for r in refused.result.results)
    assert refusal in said, said[-2000:]
    assert lake.spark.sql(history).first()["version"] == before, "the refused build committed"

    lake.dbt("run", "--select", "stg_bronze__new_events", table, "silver_quarantine")
    assert nobody["event_id"] not in {row["event_id"] for row in lake.table(f"silver.{table}")}
    quarantine = lake.table("silver.silver_quarantine")
    assert [row["reasons"] for row in quarantine if row["event_id"] == nobody["event_id"]] == [
        ["has_gamer_id"]
    ]

    # re-admission under the relaxed rule writes through the same guard
    before = lake.spark.sql(history).first()["version"]
    heard: list[str] = []
    try:
        rules.write_text(relaxed)
        readmitted, _ = lake.invoke(
            "run-operation",
            "gamelake_readmit_quarantine",
            "--args",
            f"{{game: {ACTIVE}}}",
            callbacks=(lambda event: heard.append(event.info.msg),),
        )
    finally:
        rules.write_text(kept)
    assert not readmitted.success and any(refusal in line for line in heard), heard[-5:]
    assert lake.spark.sql(history).first()["version"] == before, "the refused re-admission committed"
