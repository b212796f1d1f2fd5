"""The incremental materialization's one-statement path on real Spark + Delta
(macros/project/lean_incremental.sql): a built silver table takes its rows, and each gold
table is rewritten whole, in one statement and one commit, with no temporary view and no
`describe`, or not at all when its silver has not moved; dbt-spark's path, one setting away,
gives the same totals; a new bronze column reaches silver in the same commit as the rows and its
mark. The slice keeps file statistics for the one column its readers skip by.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from ingest.games import model_files
from tests.integration import dbt_support as support

pytestmark = [pytest.mark.integration, pytest.mark.slow]

GAME = "orbit"
NOW = datetime.now(UTC).replace(tzinfo=None, microsecond=0)


class Project(support.ProjectLake):
    """A project copy with one game, its Spark session, and the statements of its last build."""

    def __init__(self, root: Path, spark: Any) -> None:
        super().__init__(root, spark)
        self.statements: dict[str, list[str]] = {}
        self.sent: dict[str, list[str]] = {}  # as sent, case and spacing kept
        support.write_seed(self.project, {GAME: True})
        model_files.sync(self.project)

    def land_and_build(
        self, writer: support.BronzeWriter, events: int, **fields: str
    ) -> list[dict[str, Any]]:
        """``events`` new events of the game (with producer ``fields``, strings), then a build;
        the events."""
        extra = ", ".join(f"{name} string" for name in fields)
        rows = [writer.event(GAME, 4, NOW - timedelta(minutes=1), **fields) for _ in range(events)]
        self.land(rows, support.schema_for(4, extra))
        self.build()
        return rows

    def build(self, *select: str, expect_success: bool = True) -> list[str]:
        """Build (``select`` or everything); each failed node with its message."""
        self.statements, self.sent = {}, {}
        result, failed = self.invoke(
            "build", *(("--select", *select) if select else ()), callbacks=(self._record,)
        )
        assert result.success is expect_success, f"dbt build: {result.exception or failed}"
        return failed

    def _record(self, event: Any) -> None:
        if event.info.name == "SQLQuery" and event.data.node_info.unique_id:
            node = event.data.node_info.unique_id.split(".")[-1]
            self.statements.setdefault(node, []).append(" ".join(event.data.sql.split()).lower())
            self.sent.setdefault(node, []).append(event.data.sql)

    def history(self, table: str) -> list[dict[str, Any]]:
        rows = self.spark.sql(f"describe history {table}").collect()
        return sorted((row.asDict() for row in rows), key=lambda row: row["version"])


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Project]:
    root = tmp_path_factory.mktemp("one-statement")
    with support.local_spark(root / "warehouse", interpreted=True) as spark:
        yield Project(root, spark)


@pytest.fixture(scope="module")
def writer() -> support.BronzeWriter:
    return support.BronzeWriter(random.Random(7))


def _without_comment(statement: str) -> str:
    return statement.split("*/", 1)[-1].strip() if statement.startswith("/*") else statement


def _kinds(statements: list[str]) -> list[str]:
    return [_without_comment(statement).split(" ", 2)[0] for statement in statements]


def test_a_first_build_creates_the_tables_as_dbt_spark_does(
    project: Project, writer: support.BronzeWriter
) -> None:
    project.land_and_build(writer, 30)

    created = [_without_comment(s) for s in project.statements[f"silver_{GAME}"] if "create" in s]
    assert any(s.startswith("create table") or s.startswith("create or replace table") for s in created), (
        created
    )
    assert project.spark.table(f"silver.silver_{GAME}").count() == 30


def test_a_built_silver_and_player_agg_take_their_rows_in_one_statement(
    project: Project, writer: support.BronzeWriter
) -> None:
    gold = [f"gold.gold_{GAME}_player_agg", f"gold.gold_{GAME}_daily_active"]
    before = {table: project.history(table)[-1]["version"] for table in gold}
    project.land_and_build(writer, 20)

    # dbt-spark's path describes the table twice or more; player_agg's own SQL reads its columns
    # once when the refresh has not handed them over (gamelake_silver_read_plan)
    for model, verb, describes in (
        (f"silver_{GAME}", "insert with schema evolution into", 0),
        (f"gold_{GAME}_player_agg", "insert with schema evolution overwrite table", 1),
        (f"gold_{GAME}_daily_active", "insert with schema evolution overwrite table", 1),
    ):
        statements = [_without_comment(s) for s in project.statements[model]]
        assert sum(s.startswith(verb) for s in statements) == 1, statements
        assert not [s for s in statements if "temporary view" in s], statements
        assert sum(s.startswith("describe extended") for s in statements) <= describes, statements
    assert project.spark.table(f"silver.silver_{GAME}").count() == 50
    # gold: one commit a table, the whole table rewritten with every event counted once
    for table in gold:
        commits = [c for c in project.history(table) if c["version"] > before[table]]
        assert [(c["operation"], c["operationParameters"]["mode"]) for c in commits] == [
            ("WRITE", "Overwrite")
        ], table
    assert _counted_events(project) == 50


def test_gold_whose_silver_has_not_moved_sends_no_statement_and_commits_nothing(
    project: Project,
) -> None:
    gold = [f"gold.gold_{GAME}_player_agg", f"gold.gold_{GAME}_daily_active"]
    before = {table: project.history(table)[-1]["version"] for table in gold}
    project.build()  # nothing landed since the last build

    for table in gold:
        sent = [_without_comment(s) for s in project.statements.get(table.split(".")[1], [])]
        assert not [s for s in sent if s.startswith("insert")], sent
        assert project.history(table)[-1]["version"] == before[table], f"{table} committed nothing new"
    assert _counted_events(project) == 50


def test_a_new_bronze_column_reaches_silver_in_the_commit_of_its_rows(
    project: Project, writer: support.BronzeWriter
) -> None:
    silver = f"silver.silver_{GAME}"
    before = project.history(silver)[-1]["version"]
    rows = project.land_and_build(writer, 10, tournament_id="spring-cup")

    commits = [commit for commit in project.history(silver) if commit["version"] > before]
    assert [commit["operation"] for commit in commits] == ["WRITE"], commits
    mark = json.loads(commits[0]["userMetadata"])
    assert mark["gamelake.reader"] == silver
    landed = {row["event_id"]: row["tournament_id"] for row in project.spark.table(silver).collect()}
    assert len(landed) == 60
    assert {landed[row["event_id"]] for row in rows} == {"spring-cup"}
    assert sum(value is not None for value in landed.values()) == 10  # older rows: null, none lost


def test_silvers_anti_join_sorts_and_merges_and_never_broadcasts_silvers_rows(
    project: Project, writer: support.BronzeWriter
) -> None:
    # A small silver table is where Spark would broadcast it; the hint must hold at any size
    project.land_and_build(writer, 10)

    insert = next(s for s in project.sent[f"silver_{GAME}"] if "insert with schema evolution" in s.lower())
    query = re.split(r"\bby\s+name\b", insert, maxsplit=1, flags=re.IGNORECASE)[1]
    plan = project.spark.sql(f"explain {query}").collect()[0][0]
    anti_joins = [line.strip() for line in plan.splitlines() if "LeftAnti" in line]
    assert anti_joins, plan
    assert all(line.lstrip("+- :").startswith("SortMergeJoin") for line in anti_joins), anti_joins
    assert project.spark.table(f"silver.silver_{GAME}").count() == 70


def test_dbt_sparks_path_stays_one_setting_away(
    project: Project, writer: support.BronzeWriter, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GAMELAKE_INCREMENTAL", "dbt-spark")
    project.land_and_build(writer, 5)

    statements = [_without_comment(s) for s in project.statements[f"silver_{GAME}"]]
    assert any("temporary view" in s for s in statements), _kinds(statements)
    assert not any(s.startswith("insert with schema evolution") for s in statements), _kinds(statements)
    assert project.spark.table(f"silver.silver_{GAME}").count() == 75
    # gold by dbt-spark's insert_overwrite: the same totals
    for model in (f"gold_{GAME}_player_agg", f"gold_{GAME}_daily_active"):
        sent = [_without_comment(s) for s in project.statements[model]]
        assert any(s.startswith("insert overwrite table") for s in sent), _kinds(sent)
    assert _counted_events(project) == 75


def _counted_events(project: Project) -> int:
    """The events player_agg counts, one row a gamer, and daily_active counts as many."""
    row = project.spark.sql(
        f"select sum(event_count), count(*), count(distinct gamer_id) from gold.gold_{GAME}_player_agg"
    ).first()
    assert row[1] == row[2], "a gamer in two rows"
    day = project.spark.sql(
        f"select sum(event_count), count(*), count(distinct event_date) from gold.gold_{GAME}_daily_active"
    ).first()
    assert day[1] == day[2], "a day in two rows"
    assert day[0] == row[0], "daily_active counts other events than player_agg"
    return row[0]


def test_an_unknown_incremental_path_is_refused_by_name(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GAMELAKE_INCREMENTAL", "fast")
    failed = project.build(f"silver_{GAME}", expect_success=False)

    assert any(
        "GAMELAKE_INCREMENTAL is 'fast'" in message and "dbt-spark" in message for message in failed
    ), failed


def test_the_slice_keeps_file_statistics_for_bronze_version_alone(
    project: Project, writer: support.BronzeWriter
) -> None:
    # Its readers prune by game_slug's partition and find the bounds row by bronze_version's null
    # count; statistics on the other 29 columns were a quarter of its write (bench/slice_write.py)
    project.land_and_build(writer, 5)

    slice_table = "bronze.stg_bronze__new_events"
    location = project.spark.sql(f"describe detail {slice_table}").collect()[0]["location"]
    log = sorted(Path(location.removeprefix("file:"), "_delta_log").glob("*.json"))[-1]
    adds = [json.loads(line)["add"] for line in log.read_text().splitlines() if '"add"' in line]
    stats = [json.loads(add["stats"]) for add in adds]
    assert stats and all(set(s["nullCount"]) == {"bronze_version"} for s in stats), stats
    assert {s["nullCount"]["bronze_version"] for s in stats} == {0, 1}, "the bounds row's file and the rows'"
    bounds = project.spark.sql(f"select slice_to_version from {slice_table} where bronze_version is null")
    assert bounds.count() == 1
    assert project.spark.table(f"silver.silver_{GAME}").count() == 80
