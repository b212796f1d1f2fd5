"""The refresh's dbt runner parses the project once and again only when its files change
(ingest/ops/warm_dbt.py), with real dbt on a private copy of the project."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ingest.games import model_files as games
from ingest.ops.warm_dbt import WarmDbt, project_stamp
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
