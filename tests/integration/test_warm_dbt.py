"""The refresh's dbt runner parses the project once and again only when its files change, and
runs a parse's unit tests until they pass (ingest/ops/warm_dbt.py), with real dbt on a private
copy of the project."""

from __future__ import annotations

import os
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from ingest.games import model_files as games
from ingest.ops.warm_dbt import WarmDbt, excluding, project_stamp
from tests.integration import dbt_support as support

pytestmark = [pytest.mark.integration]


def _listed(runner: WarmDbt, *args: str) -> set[str]:
    result = runner.invoke("ls", "--resource-type", "model", "--output", "name", *args)
    assert result.success, result.exception
    return set(result.result)


def test_the_project_is_parsed_once_until_a_game_is_added(tmp_path: Path) -> None:
    project = support.copy_project(tmp_path / "project")
    support.write_seed(project, {"alpha": True})
    games.sync(project)
    runner = WarmDbt(project, project / "profiles")

    assert "silver_alpha" in _listed(runner)
    assert "silver_alpha" in _listed(runner, "--select", "silver_alpha+")
    assert runner.parses == 1, "an unchanged project was parsed again"

    support.write_seed(project, {"alpha": True, "beta": True})  # a game added while it runs
    games.sync(project)
    assert {"silver_beta", "gold_beta_player_agg"} <= _listed(runner)
    assert runner.parses == 2, "the new game's models were not parsed"

    assert "silver_beta" in _listed(runner, "--vars", '{"gamelake_slice_max_rows": 10}')
    assert runner.parses == 3, "vars dbt parses with changed, and the manifest was reused"


def test_the_stamp_follows_an_edit_an_addition_and_a_removal(tmp_path: Path) -> None:
    project = support.copy_project(tmp_path / "project")
    before = project_stamp(project)
    macro = project / "macros" / "extra.sql"
    macro.write_text("{% macro extra() %}1{% endmacro %}\n")
    added = project_stamp(project)
    assert added[0] == before[0] + 1
    macro.write_text("{% macro extra() %}2{% endmacro %}\n")
    later = added[1] + 1_000_000_000
    os.utime(macro, ns=(later, later))
    assert project_stamp(project) == (added[0], later)
    macro.unlink()
    assert project_stamp(project)[0] == before[0]


def _unit_tests_run(result: Any) -> list[str]:
    assert result.success, result.exception or [r.message for r in result.result.results if r.message]
    return [r.node.name for r in result.result.results if r.node.resource_type == "unit_test"]


def test_unit_tests_run_until_they_pass_on_a_parse_and_again_on_the_next(tmp_path: Path) -> None:
    writer = support.BronzeWriter(random.Random(3))
    now = datetime.now(UTC).replace(tzinfo=None, microsecond=0)
    with support.local_spark(tmp_path / "warehouse", interpreted=True) as spark:
        lake = support.ProjectLake(tmp_path, spark)
        support.write_seed(lake.project, {"alpha": True})
        games.sync(lake.project)
        runner = WarmDbt(lake.project, lake.project / "profiles")

        def land_and_build() -> list[str]:
            lake.land(
                [writer.event("alpha", 4, now - timedelta(minutes=1)) for _ in range(5)],
                support.schema_for(4),
            )
            return _unit_tests_run(runner.invoke("build", "--select", "+silver_alpha"))

        assert land_and_build() == ["silver_dedup_keeps_first_landing_and_skips_loaded_events"]
        assert land_and_build() == [], "a passed unit test ran again on the same parse"
        macro = lake.project / "macros" / "extra.sql"
        macro.write_text("{% macro extra() %}1{% endmacro %}\n")  # an edit: the next build parses
        assert land_and_build() == ["silver_dedup_keeps_first_landing_and_skips_loaded_events"]
        assert runner.parses == 2
        assert spark.table("silver.silver_alpha").count() == 15  # every build took its rows


def test_a_passed_unit_test_is_left_out_beside_the_other_exclusions() -> None:
    assert excluding(("build", "--select", "a+", "--exclude", "b", "--threads", "1"), "test_type:unit") == (
        "build",
        "--select",
        "a+",
        "--exclude",
        "test_type:unit",
        "b",
        "--threads",
        "1",
    )
    assert excluding(("build",), "test_type:unit") == ("build", "--exclude", "test_type:unit")
