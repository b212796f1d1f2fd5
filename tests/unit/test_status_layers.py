"""``ingest status`` without services: real Delta tables in a tmp dir, Kafka and the registry as data.

Bronze is written by the ingest's own writer (and compacted), dead letters with their real schema.
Silver and gold are written with delta-rs and given what Spark gives them: a Spark-style
``SET TBLPROPERTIES`` commit holds silver's mark (delta-rs refuses properties outside
``delta.*``). Commit times are set in the log, so every freshness is exact to the second.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import ClassVar

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from ingest.cli import build_parser
from ingest.core.errors import ConfigError
from ingest.core.settings.ingest_settings import IngestSettings, load_settings
from ingest.games.seed import Game
from ingest.landing.delta.bronze_writer import BronzeWriter
from ingest.landing.delta.fences import Landing
from ingest.landing.side_tables.dead_letters import DEAD_LETTER_SCHEMA
from ingest.ops.status.anomalies import EXIT_CODES, overall_level
from ingest.ops.status.delta_commits import Commit, History, adds_rows
from ingest.ops.status.render import render
from ingest.ops.status.report import assemble, schema_ids
from ingest.ops.status.time_text import human_duration
from tests.unit.test_ingest_writer import TP, _rows

NOW = float(int(time.time()))
MIN = 60.0
GAMES = [
    Game("space_raiders", "Space Raiders", True, "Nebula Forge", 2),
    Game("kart_legends", "Kart Legends", True, "Turbo Owl", 3),
    Game("retro_arena", "Retro Arena", False, "Pocket Pixel", 4),
]
REACHABLE = {"url": "http://registry:8081", "reachable": True, "error": None}


# --- building the tables -------------------------------------------------------------------------


def _log(path: Path, version: int) -> Path:
    return path / "_delta_log" / f"{version:020d}.json"


def _stamp(path: Path, times: dict[int, float]) -> None:
    """Set the commit time (commitInfo.timestamp) of each version in ``times``."""
    for version, at in times.items():
        actions = [json.loads(line) for line in _log(path, version).read_text().splitlines()]
        for action in actions:
            if "commitInfo" in action:
                action["commitInfo"]["timestamp"] = int(at * 1000)
        _log(path, version).write_text("".join(json.dumps(a) + "\n" for a in actions))


def _spark_set_properties(path: Path, properties: dict[str, str]) -> int:
    """What Spark's ALTER TABLE ... SET TBLPROPERTIES commits: commitInfo and the new metaData."""
    version = DeltaTable(str(path)).version()
    metadata = next(
        action["metaData"]
        for v in range(version, -1, -1)
        for action in map(json.loads, _log(path, v).read_text().splitlines())
        if "metaData" in action
    )
    metadata["configuration"] = {**metadata["configuration"], **properties}
    info = {
        "timestamp": int(time.time() * 1000),
        "operation": "SET TBLPROPERTIES",
        "operationParameters": {"properties": json.dumps(properties)},
        "readVersion": version,
        "isBlindAppend": True,
        "operationMetrics": {},
    }
    _log(path, version + 1).write_text(
        json.dumps({"commitInfo": info}) + "\n" + json.dumps({"metaData": metadata})
    )
    return version + 1


def _bronze(settings: IngestSettings) -> list[float]:
    """v0 create, v1 and v2 append, v3 OPTIMIZE, v4 append: offsets 0..6 of TP landed."""
    writer = BronzeWriter(settings.bronze_path, settings.app_id)
    writer.commit(writer.write_files(_rows([0, 1, 2])), {TP: Landing(None, 2)}, {})
    writer.commit(writer.write_files(_rows([3, 4])), {TP: Landing(2, 4)}, {})
    DeltaTable(str(settings.bronze_path)).optimize.compact()
    writer.commit(writer.write_files(_rows([5, 6])), {TP: Landing(4, 6)}, {})
    times = [NOW - 50 * MIN, NOW - 40 * MIN, NOW - 30 * MIN, NOW - 25 * MIN, NOW - 20 * MIN]
    _stamp(settings.bronze_path, dict(enumerate(times)))
    return times


def _silver(settings: IngestSettings, slug: str, rows: int, bronze_mark: int) -> None:
    """silver_<slug>: v0 rows, v1 its mark, v2 one more row, v3 the mark again (two builds)."""
    path = settings.dbt_table_path("silver", f"silver_{slug}")
    first = pa.table({"event_id": [f"{slug}-{i}" for i in range(rows)], "game_slug": [slug] * rows})
    write_deltalake(str(path), first, configuration={"delta.enableChangeDataFeed": "true"})
    _spark_set_properties(
        path, {"gamelake.bronze_version": "0", "gamelake.bronze_marked_at": "2026-01-01 00:00:00"}
    )
    write_deltalake(str(path), pa.table({"event_id": [f"{slug}-new"], "game_slug": [slug]}), mode="append")
    _spark_set_properties(path, {"gamelake.bronze_version": str(bronze_mark)})
    _stamp(path, {0: NOW - 45 * MIN, 1: NOW - 44 * MIN, 2: NOW - 10 * MIN, 3: NOW - 9 * MIN})


def _gold(settings: IngestSettings, slug: str, silver_version: int) -> None:
    for kind, key in (("player_agg", "gamer_id"), ("daily_active", "event_date")):
        rows = pa.table({key: ["a", "b"], "silver_version": pa.array([0, silver_version], pa.int64())})
        path = settings.dbt_table_path("gold", f"gold_{slug}_{kind}")
        write_deltalake(str(path), rows)
        _stamp(path, {0: NOW - 8 * MIN})


def _quarantine(settings: IngestSettings, by_game: dict[str | None, int], bronze_mark: int) -> None:
    path = settings.dbt_table_path("silver", "silver_quarantine")
    slugs = [slug for slug, n in by_game.items() for _ in range(n)]
    rows = pa.table(
        {"quarantine_id": [str(i) for i in range(len(slugs))], "game_slug": pa.array(slugs, pa.string())}
    )
    write_deltalake(str(path), rows, mode="overwrite")
    version = _spark_set_properties(path, {"gamelake.bronze_version": str(bronze_mark)})
    _stamp(path, {version - 1: NOW - 9 * MIN, version: NOW - 9 * MIN})


def _dead_letters(settings: IngestSettings, stages_and_ages: list[tuple[str, float]]) -> None:
    rows = [
        {"dead_letter_id": str(i), "stage": stage, "dead_lettered_at": int((NOW - age) * 1_000_000)}
        for i, (stage, age) in enumerate(stages_and_ages)
    ]
    table = pa.Table.from_pylist(rows, schema=DEAD_LETTER_SCHEMA)
    write_deltalake(str(settings.dead_letters_path), table, mode="overwrite")


def _partition(landed: int | None = 6, earliest: int = 0, high: int = 7, age: float | None = None) -> dict:
    next_offset = earliest if landed is None else max(earliest, landed + 1)
    lag = max(0, high - next_offset)
    return {
        "topic": "events",
        "partition": 0,
        "landed_offset": landed,
        "earliest": earliest,
        "high_watermark": high,
        "next_offset": next_offset,
        "lag": lag,
        "expired_gap": landed is not None and landed + 1 < earliest,
        "ahead_of_end": landed is not None and landed >= high,
        "oldest_unlanded_at": None,
        "unlanded_age_s": age if lag else None,
    }


@pytest.fixture
def settings(tmp_path) -> IngestSettings:
    return IngestSettings(warehouse_dir=tmp_path, bootstrap_servers="kafka:9092", topics=["events"])


@pytest.fixture
def caught_up(settings) -> IngestSettings:
    """Every layer has read everything: silver marked at bronze v4, gold at silver v2."""
    _bronze(settings)
    for game in GAMES:
        _silver(settings, game.slug, rows=99, bronze_mark=4)
        _gold(settings, game.slug, silver_version=2)
    _quarantine(settings, {"space_raiders": 1}, bronze_mark=4)
    _dead_letters(settings, [("decode", 2 * 3600)])
    return settings


def _report(
    settings: IngestSettings, partitions: list[dict] | None = None, registry: dict = REACHABLE
) -> dict:
    return assemble(settings, GAMES, [_partition()] if partitions is None else partitions, registry, NOW)


def _codes(report: dict) -> list[tuple[str, str, str]]:
    return [(a["level"], a["code"], a["subject"]) for a in report["anomalies"]]


# --- which commits count, and how far a reader trails ----------------------------------------------


@pytest.mark.parametrize(
    ("info", "counts"),
    [
        ({"operation": "WRITE"}, True),  # the ingest's commits carry no row counts
        ({"operation": "WRITE", "operationMetrics": {"num_added_rows": 0}}, False),
        ({"operation": "WRITE", "operationMetrics": {"numOutputRows": "12"}}, True),
        ({"operation": "WRITE", "operationMetrics": {"numOutputRows": "0"}}, False),
        ({"operation": "CREATE TABLE AS SELECT", "operationMetrics": {"numOutputRows": "5"}}, True),
        (
            {"operation": "MERGE", "operationMetrics": {"numOutputRows": "90", "numTargetRowsInserted": "0"}},
            False,
        ),
        (
            {
                "operation": "MERGE",
                "operationMetrics": {"numTargetRowsInserted": "0", "numTargetRowsUpdated": "3"},
            },
            True,
        ),
        ({"operation": "WRITE", "gamelake.rows": "7"}, True),
        ({"operation": "WRITE", "gamelake.rows": "0"}, False),  # a batch that only dead-lettered
        ({"operation": "OPTIMIZE", "operationMetrics": {"numFilesAdded": 1}}, False),
        ({"operation": "SET TBLPROPERTIES", "operationMetrics": {}}, False),
        ({"operation": "CREATE TABLE"}, False),
        ({"operation": "VACUUM END"}, False),
    ],
)
def test_a_commit_adds_rows_by_its_operation_and_its_row_counts(info, counts):
    assert adds_rows(info) is counts


def test_a_reader_trails_by_the_age_of_the_first_commit_after_its_mark_that_added_rows():
    history = History((Commit(3, 100.0, True), Commit(4, 200.0, False), Commit(5, 300.0, True)), current=5)
    assert history.trail(2, now=1000.0).seconds == 900.0
    assert history.trail(3, now=1000.0).seconds == 700.0  # version 4 is an OPTIMIZE
    assert history.trail(5, now=1000.0).seconds == 0.0
    assert history.trail(9, now=1000.0).seconds == 0.0  # a mark past the table: nothing unread


def test_a_reader_behind_the_commits_read_trails_by_at_least_the_oldest_of_them():
    history = History((Commit(7, 100.0, False), Commit(8, 200.0, True)), current=8)
    trail = history.trail(2, now=1000.0)  # versions 3..6 are not in the window (or the log)
    assert (trail.seconds, trail.exact) == (900.0, False)
    assert history.trail(None, now=1000.0).exact is False
    assert history.trail(6, now=1000.0).exact is True


# --- the report on real tables ---------------------------------------------------------------------


def test_every_layer_caught_up_is_healthy_exit_0(caught_up):
    report = _report(caught_up)
    assert (report["level"], report["exit_code"], report["anomalies"]) == ("healthy", 0, [])
    assert report["tables"]["bronze"]["rows"] == 7 and report["tables"]["bronze"]["version"] == 4
    assert report["tables"]["bronze"]["freshness_s"] == 0.0
    assert report["silver"]["space_raiders"]["rows"] == 100
    assert report["silver"]["space_raiders"]["bronze_version"] == 4
    assert {g["freshness_s"] for g in report["silver"].values()} == {0.0}
    assert report["gold"]["kart_legends"]["silver_version"] == 2
    assert {g["freshness_s"] for g in report["gold"].values()} == {0.0}
    assert report["quarantine"]["by_game"] == {"space_raiders": 1}
    assert report["silver"]["space_raiders"]["quarantine_ratio"] == 1 / 101
    assert report["tables"]["dead_letters"]["last_hour_by_stage"] == {}
    assert report["schema_ids"] == [1]


def test_silver_trails_bronze_from_the_first_append_after_its_mark_not_the_optimize(settings):
    bronze_times = _bronze(settings)
    _silver(settings, "space_raiders", rows=5, bronze_mark=2)  # v3 OPTIMIZE, v4 append unread
    _silver(settings, "kart_legends", rows=5, bronze_mark=0)  # v1 append unread
    report = _report(settings)
    raiders, kart = report["silver"]["space_raiders"], report["silver"]["kart_legends"]
    assert raiders["freshness_s"] == NOW - bronze_times[4] == 20 * MIN and raiders["freshness_exact"]
    assert kart["freshness_s"] == NOW - bronze_times[1] == 40 * MIN
    assert ("warning", "stale", "silver_space_raiders") in _codes(report)
    assert ("warning", "stale", "silver_kart_legends") in _codes(report)
    message = next(a["message"] for a in report["anomalies"] if a["subject"] == "silver_space_raiders")
    assert message.startswith(
        "silver_space_raiders trails bronze by 20 min: is `ingest refresh --continuous`"
    )


def _slice(settings: IngestSettings, marks: dict[str, int], rows: dict[str, int], to: int) -> None:
    """The bronze slice as dbt leaves it: a row per game and bronze version, and the bounds row."""
    games = [*rows, None]
    write_deltalake(
        str(settings.dbt_table_path("bronze", "stg_bronze__new_events")),
        pa.table(
            {
                "game_slug": pa.array(games, pa.string()),
                "bronze_version": pa.array([*rows.values(), None], pa.int64()),
                "slice_to_version": pa.array([to] * len(games), pa.int64()),
                "slice_reader_marks": pa.array([None] * len(rows) + [json.dumps(marks)], pa.string()),
            }
        ),
    )


def test_a_game_the_slice_held_nothing_for_has_read_up_to_the_slice(settings):
    bronze_times = _bronze(settings)
    _silver(settings, "space_raiders", rows=5, bronze_mark=2)
    _silver(settings, "kart_legends", rows=5, bronze_mark=0)  # not built since: it had no new rows
    _slice(settings, {"silver_space_raiders": 2, "silver_kart_legends": 0}, {"space_raiders": 4}, to=4)
    report = _report(settings)
    raiders, kart = report["silver"]["space_raiders"], report["silver"]["kart_legends"]
    assert kart["bronze_version"] == 4 and kart["freshness_s"] == 0.0
    assert raiders["bronze_version"] == 2 and raiders["freshness_s"] == NOW - bronze_times[4]
    assert ("warning", "stale", "silver_kart_legends") not in _codes(report)


def test_freshness_thresholds_come_from_the_settings(tmp_path, monkeypatch):
    settings = load_settings(warehouse_dir=tmp_path, topics=["events"])
    _bronze(settings)
    _silver(settings, "space_raiders", rows=5, bronze_mark=0)  # 40 min behind
    assert ("warning", "stale", "silver_space_raiders") in _codes(_report(settings))
    monkeypatch.setenv("GAMELAKE_INGEST_STATUS_FRESHNESS_WARN_S", "60")
    monkeypatch.setenv("GAMELAKE_INGEST_STATUS_FRESHNESS_CRIT_S", "1800")
    strict = load_settings(warehouse_dir=tmp_path, topics=["events"])
    assert ("critical", "stale", "silver_space_raiders") in _codes(_report(strict))
    assert _report(strict)["exit_code"] == 2
    lenient = settings.model_copy(
        update={"status_freshness_warn_s": 3000.0, "status_freshness_crit_s": 4000.0}
    )
    assert "stale" not in {a["code"] for a in _report(lenient)["anomalies"]}


def test_gold_ignores_silvers_mark_commits_and_trails_its_first_new_rows(caught_up):
    agg = caught_up.dbt_table_path("gold", "gold_space_raiders_player_agg")
    write_deltalake(
        str(agg),
        pa.table({"gamer_id": ["c"], "silver_version": pa.array([0], pa.int64())}),
        mode="overwrite",
    )
    _stamp(agg, {1: NOW - 8 * MIN})
    report = _report(caught_up)
    raiders = report["gold"]["space_raiders"]
    assert raiders["silver_version"] == 0  # the slower of its two tables
    assert raiders["freshness_s"] == 10 * MIN  # silver v1 is SET TBLPROPERTIES; v2 added rows
    assert report["gold"]["kart_legends"]["freshness_s"] == 0.0  # silver v3 is its mark only
    assert raiders["player_agg"]["rows"] == 1 and raiders["daily_active"]["rows"] == 2


def test_tables_not_built_yet_are_one_warning_per_layer(settings):
    _bronze(settings)
    report = _report(settings)
    assert (report["level"], report["exit_code"]) == ("warning", 1)
    missing = {a["subject"]: a["message"] for a in report["anomalies"] if a["code"] == "table_missing"}
    assert missing == {
        "silver": "silver_space_raiders, silver_kart_legends, silver_quarantine not created yet: "
        "run `ingest refresh` (dbt build)",
        "gold": "gold_space_raiders_player_agg, gold_space_raiders_daily_active, "
        "gold_kart_legends_player_agg, gold_kart_legends_daily_active not created yet: "
        "run `ingest refresh` (dbt build)",
    }
    assert (
        report["silver"]["retro_arena"] | {"exists": False, "active": False}
        == report["silver"]["retro_arena"]
    )
    assert report["silver"]["space_raiders"]["freshness_s"] is None


def test_nothing_at_all_warns_that_bronze_is_not_created(settings):
    report = _report(settings, partitions=[_partition(landed=None, high=0)])
    assert ("warning", "table_missing", "bronze") in _codes(report)
    assert (
        report["tables"]["bronze"] | {"exists": False, "rows": 0, "version": None}
        == report["tables"]["bronze"]
    )


def test_a_paused_game_is_listed_but_not_judged(caught_up):
    paused = caught_up.dbt_table_path("silver", "silver_retro_arena")
    _spark_set_properties(paused, {"gamelake.bronze_version": "0"})  # kept while paused
    report = _report(caught_up)
    assert report["silver"]["retro_arena"]["active"] is False
    assert report["silver"]["retro_arena"]["freshness_s"] == 40 * MIN
    assert report["level"] == "healthy"
    assert "retro_arena" in render(report) and "paused" in render(report)


def test_kafka_anomalies_are_critical_for_offsets_and_a_warning_for_lag(caught_up):
    ahead = _partition(landed=6, high=3)  # the topic is shorter than what bronze landed
    expired = _partition(landed=6, earliest=10, high=12, age=120.0)
    report = _report(caught_up, partitions=[ahead, expired])
    assert _codes(report)[:2] == [
        ("critical", "offset_ahead_of_end", "events[0]"),
        ("critical", "expired_offsets", "events[0]"),
    ]
    assert "topic recreated or wrong cluster" in report["anomalies"][0]["message"]
    assert "offsets 7..9 expired from Kafka" in report["anomalies"][1]["message"]
    assert report["exit_code"] == 2
    lagging = caught_up.model_copy(update={"status_lag_warn_records": 2})
    report = _report(lagging, partitions=[_partition(landed=6, high=9, age=1200.0)])
    assert _codes(report) == [("warning", "consumer_lag", "kafka"), ("warning", "stale", "bronze")]
    assert report["tables"]["bronze"]["freshness_s"] == 1200.0 and report["kafka"]["lag"] == 2


def test_an_unreachable_registry_is_critical(caught_up):
    down = {
        "url": "http://registry:8081",
        "reachable": False,
        "error": "Schema Registry at http://registry:8081 is not reachable: ConnectionError",
    }
    report = _report(caught_up, registry=down)
    assert _codes(report) == [("critical", "registry_unreachable", "registry")]
    assert report["anomalies"][0]["message"].startswith(
        "Schema Registry at http://registry:8081 is not reachable"
    )


def test_dead_letters_of_the_last_hour_warn_by_stage(caught_up):
    _dead_letters(caught_up, [("decode", 60.0), ("decode", 600.0), ("framing", 30.0), ("framing", 5000.0)])
    report = _report(caught_up)
    assert report["tables"]["dead_letters"]["last_hour_by_stage"] == {"decode": 2, "framing": 1}
    assert _codes(report) == [
        ("warning", "dead_letters", "dead_letters decode"),
        ("warning", "dead_letters", "dead_letters framing"),
    ]
    quiet = caught_up.model_copy(update={"status_dead_letters_warn_per_hour": 3})
    assert _report(quiet)["level"] == "healthy"


def test_a_game_with_too_many_quarantined_rows_warns(caught_up):
    _quarantine(caught_up, {"kart_legends": 5, "space_raiders": 1}, bronze_mark=4)
    report = _report(caught_up)
    assert report["silver"]["kart_legends"]["quarantine_ratio"] == 5 / 105
    assert _codes(report) == [("warning", "quarantine_ratio", "silver_kart_legends")]
    assert report["anomalies"][0]["message"].startswith(
        "silver_kart_legends: 4.8% of the game's rows are in silver_quarantine (5): its reasons column"
    )


def test_quarantined_rows_of_games_outside_the_seed_warn_overall(caught_up):
    _quarantine(caught_up, {"not_a_game": 20, None: 1}, bronze_mark=4)
    report = _report(caught_up)
    assert report["quarantine"]["by_game"] == {"not_a_game": 20, "(none)": 1}
    assert _codes(report) == [("warning", "quarantine_ratio", "silver_quarantine")]


# --- levels, exit codes, text, JSON, help ----------------------------------------------------------


def test_the_worst_anomaly_sets_the_level_and_the_exit_code():
    warning, critical = {"level": "warning"}, {"level": "critical"}
    assert [overall_level(found) for found in ([], [warning], [warning, critical])] == [
        "healthy",
        "warning",
        "critical",
    ]
    assert EXIT_CODES == {"healthy": 0, "warning": 1, "critical": 2}


def test_the_text_has_a_table_per_layer_and_the_anomalies(settings):
    _bronze(settings)
    _silver(settings, "space_raiders", rows=5, bronze_mark=2)
    text = render(_report(settings, partitions=[_partition(landed=6, high=9, age=75.0)]))
    lines = text.splitlines()
    assert lines[0].startswith("gamelake status ") and lines[0].endswith(": warning (exit 1)")
    assert any(line.startswith("kafka (group gamelake-ingest)") for line in lines)
    assert any(line.split()[:3] == ["events[0]", "6", "9"] for line in lines)
    bronze = next(line for line in lines if line.strip().startswith("game_events"))
    assert bronze.split()[1:3] == ["7", "4"] and bronze.rstrip().endswith("1 min")
    raiders = next(line for line in lines if line.strip().startswith("space_raiders"))
    assert raiders.split()[3].endswith("Z") and raiders.rstrip().endswith("20 min")
    assert "  kart_legends" in text and "not created yet" in text
    anomalies = lines[lines.index("anomalies:") + 1 :]
    assert (
        "  warning  silver_space_raiders trails bronze by 20 min: is `ingest refresh --continuous` running, "
        "and did its last dbt build pass?" in anomalies
    )


def test_the_json_has_a_stable_shape(caught_up):
    report = json.loads(json.dumps(_report(caught_up)))
    assert set(report) == {
        "checked_at", "level", "exit_code", "consumer_group", "dbt_tables_dir", "partitions", "kafka",
        "schema_ids", "tables", "silver", "quarantine", "gold", "registry", "thresholds", "anomalies",
    }  # fmt: skip
    assert set(report["partitions"][0]) == {
        "topic", "partition", "landed_offset", "earliest", "high_watermark", "next_offset", "lag",
        "expired_gap", "ahead_of_end", "oldest_unlanded_at", "unlanded_age_s",
    }  # fmt: skip
    table_keys = {"path", "exists", "version", "rows", "last_commit_at"}
    assert set(report["tables"]["bronze"]) == table_keys | {"freshness_s", "freshness_exact"}
    assert set(report["tables"]["dead_letters"]) == table_keys | {"last_hour_by_stage"}
    assert set(report["silver"]["space_raiders"]) == table_keys | {
        "active", "bronze_version", "freshness_s", "freshness_exact", "quarantine_rows", "quarantine_ratio",
    }  # fmt: skip
    assert set(report["gold"]["space_raiders"]) == {
        "active", "exists", "silver_version", "freshness_s", "freshness_exact", "last_commit_at",
        "player_agg", "daily_active",
    }  # fmt: skip
    assert report["thresholds"] == {
        "status_lag_warn_records": 100_000,
        "status_freshness_warn_s": 900.0,
        "status_freshness_crit_s": 3600.0,
        "status_dead_letters_warn_per_hour": 1,
        "status_quarantine_warn_ratio": 0.01,
    }
    assert report["checked_at"] == time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(NOW))
    assert report["dbt_tables_dir"] == str(caught_up.warehouse_dir / "spark")


def test_status_help_names_the_exit_codes_and_every_threshold():
    parser = build_parser()
    status = parser._subparsers._group_actions[0].choices["status"]  # type: ignore[union-attr]
    text = status.format_help()
    assert "0  healthy" in text and "1  a warning" in text and "2  critical" in text
    for name in IngestSettings.model_fields:
        if name.startswith("status_"):
            assert f"{name} (GAMELAKE_INGEST_{name.upper()})" in text


def test_the_dbt_warehouse_is_a_setting_and_thresholds_are_checked(tmp_path):
    assert (
        load_settings(warehouse_dir=tmp_path).dbt_table_path("gold", "g")
        == tmp_path / "spark" / "gold.db" / "g"
    )
    moved = load_settings(warehouse_dir=tmp_path, dbt_warehouse_dir=tmp_path / "elsewhere")
    assert moved.dbt_table_path("silver", "s") == tmp_path / "elsewhere" / "silver.db" / "s"
    with pytest.raises(ConfigError, match="status_freshness_crit_s must be >= status_freshness_warn_s"):
        load_settings(status_freshness_warn_s=600, status_freshness_crit_s=60)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(None, "-"), (0, "0 s"), (59.9, "59 s"), (180, "3 min"), (7_500, "2 h 5 min"), (90_000, "1 d 1 h")],
)
def test_durations_read_as_people_say_them(seconds, text):
    assert human_duration(seconds) == text


# --- Kafka and the registry, faked and closed -------------------------------------------------------


class _Message:
    def __init__(self, partition: int, at_ms: int) -> None:
        self._partition, self._at_ms = partition, at_ms

    def error(self) -> None:
        return None

    def timestamp(self) -> tuple[int, int]:
        return 1, self._at_ms  # TIMESTAMP_CREATE_TIME

    def topic(self) -> str:
        return "events"

    def partition(self) -> int:
        return self._partition


class _FakeConsumer:
    """A topic of three partitions: 0 landed to its end, 1 lags by 4 from offset 7, 2 never landed."""

    WATERMARKS: ClassVar[dict[int, tuple[int, int]]] = {0: (0, 7), 1: (0, 11), 2: (5, 8)}
    assigned: ClassVar[list[tuple[int, int]]] = []

    def __init__(self, config: dict) -> None:
        self.config = config

    def list_topics(self, timeout: float):
        partitions = {p: None for p in self.WATERMARKS}
        return type("Metadata", (), {"topics": {"events": type("Topic", (), {"partitions": partitions})}})

    def get_watermark_offsets(self, tp, timeout: float) -> tuple[int, int]:
        return self.WATERMARKS[tp.partition]

    def assign(self, partitions) -> None:
        _FakeConsumer.assigned = [(tp.partition, tp.offset) for tp in partitions]

    def consume(self, num_messages: int, timeout: float) -> list[_Message]:
        return [
            _Message(1, int((NOW - 300) * 1000)),
            _Message(1, int(NOW * 1000)),
            _Message(2, int((NOW - 90) * 1000)),
        ]

    def close(self) -> None:
        pass


def _open_fake(settings, errors, extra) -> _FakeConsumer:
    assert extra["group.id"].startswith(f"{settings.group_id}-status-")  # never the service's group
    assert extra["enable.auto.commit"] is False
    return _FakeConsumer(extra)


def test_partitions_read_the_landed_offset_from_bronze_and_peek_the_oldest_unlanded_message(
    settings, monkeypatch
):
    from ingest.landing.records import TopicPartition
    from ingest.ops.status import kafka_offsets

    _bronze(settings)  # events[0] landed to offset 6
    writer = BronzeWriter(settings.bronze_path, settings.app_id)
    writer.commit(writer.write_files(_rows([6])), {TopicPartition("events", 1): Landing(None, 6)}, {})
    monkeypatch.setattr(kafka_offsets, "open_consumer", _open_fake)
    rows = kafka_offsets.partitions(settings, DeltaTable(str(settings.bronze_path)), NOW)
    assert [(r["partition"], r["landed_offset"], r["next_offset"], r["lag"]) for r in rows] == [
        (0, 6, 7, 0),
        (1, 6, 7, 4),
        (2, None, 5, 3),
    ]
    assert _FakeConsumer.assigned == [(1, 7), (2, 5)]  # only the lagging ones, at their next offset
    assert [r["unlanded_age_s"] for r in rows] == [None, 300.0, 90.0]
    assert rows[1]["oldest_unlanded_at"] == time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(NOW - 300))
    report = assemble(settings, GAMES, rows, REACHABLE, NOW)
    assert report["tables"]["bronze"]["freshness_s"] == 300.0 and report["kafka"]["lag"] == 7


def test_collect_reads_the_seed_and_reports_a_closed_registry_as_critical(settings, monkeypatch):
    from ingest.ops.status import kafka_offsets
    from ingest.ops.status import status_command as command

    monkeypatch.setattr(kafka_offsets, "open_consumer", _open_fake)
    monkeypatch.setattr(kafka_offsets, "PEEK_TIMEOUT_S", 0.2)  # events[0] never answers the peek
    closed = settings.model_copy(update={"registry_url": "http://127.0.0.1:1", "registry_timeout_s": 2.0})
    report = command.collect(closed, now=NOW)
    assert report["registry"]["reachable"] is False
    assert report["registry"]["error"].startswith("Schema Registry at http://127.0.0.1:1 is not reachable")
    assert (report["level"], report["exit_code"]) == ("critical", 2)
    assert set(report["silver"]) >= {"space_raiders", "retro_arena"}  # seeds/games.csv
    assert report["silver"]["retro_arena"]["active"] is False


def test_schema_ids_are_the_distinct_ids_over_every_file_and_batch(tmp_path):
    for ids in ([4, 1, 4], [2, 1], [7] * 200_000):
        write_deltalake(str(tmp_path), pa.table({"_schema_id": pa.array(ids, pa.int32())}), mode="append")
    assert schema_ids(DeltaTable(str(tmp_path))) == [1, 2, 4, 7]
    assert schema_ids(None) == []
