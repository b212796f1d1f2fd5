"""``ingest dbt-build`` runs ``dbt build`` in two invocations, below gold on one thread and gold on
several (ingest/ops/dbt_build_command.py). With real dbt on a copy of the project: the halves
list every node a ``dbt build`` with no --select runs, each once, and a node that fails in the
first half leaves out of the second what one ``dbt build`` would skip below it."""

from __future__ import annotations

import pytest

from ingest.ops.dbt_build_command import below_silver_args, gold_args
from ingest.ops.refresh_command import DEFAULT_GOLD_THREADS
from ingest.ops.warm_dbt import WarmDbt
from tests.integration import dbt_support as support

pytestmark = [pytest.mark.integration]

BUILT = ("model", "test", "seed", "unit_test")


def _listed(runner: WarmDbt, build_args: list[str]) -> list[str]:
    """The nodes ``dbt <build_args>`` would run, by name (``dbt ls`` with the same selection)."""
    assert build_args[0] == "build"
    selection = list(build_args[1:])
    threads = selection.index("--threads")
    del selection[threads : threads + 2]
    kinds = [arg for kind in BUILT for arg in ("--resource-type", kind)]
    result = runner.invoke("ls", "--output", "name", *kinds, *selection)
    assert result.success, result.exception
    return list(result.result)


@pytest.fixture(scope="module")
def runner(tmp_path_factory: pytest.TempPathFactory) -> WarmDbt:
    project = support.copy_project(tmp_path_factory.mktemp("halves") / "project")
    return WarmDbt(project, project / "profiles")


def test_the_two_halves_run_every_node_of_a_build_once(runner: WarmDbt) -> None:
    whole = _listed(runner, ["build", "--threads", "1"])  # the default selector: all but the audit
    first, second = _listed(runner, below_silver_args()), _listed(runner, gold_args())

    assert sorted(first + second) == sorted(whole)
    assert not set(first) & set(second)
    assert {"games", "silver_space_raiders", "assert_silver_new_rows_valid"} <= set(first)
    assert {"gold_space_raiders_player_agg", "assert_gold_rows_valid"} <= set(second)
    assert not any(name.startswith("gold_") for name in first)
    # a bronze reader's mark is a conf of the shared session: silver runs on one thread
    assert below_silver_args()[-2:] == ["--threads", "1"]
    assert gold_args()[-2:] == ["--threads", str(DEFAULT_GOLD_THREADS)]


def test_a_node_failed_in_the_first_half_leaves_out_what_is_below_it(runner: WarmDbt) -> None:
    second = set(_listed(runner, gold_args(stopped=("silver_kart_legends",))))

    assert not {name for name in second if name.startswith("gold_kart_legends_")}
    assert "assert_gold_rows_valid" not in second  # it reads kart_legends' gold too
    assert {"gold_puzzle_pop_player_agg", "gold_puzzle_pop_daily_active"} <= second
    assert not set(_listed(runner, gold_args(stopped=("games",)))) & {"gold_puzzle_pop_player_agg"}
