"""Which games a refresh cycle builds, from what the slice says about its readers."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest

from ingest.core.settings.paths import PROJECT_DIR
from ingest.ops.refresh_command import DEFAULT_SILVER_THREADS, silver_threads_for
from ingest.ops.refresh_selection import (
    ANY_GAME,
    GOLD_CHECK,
    SILVER_CHECK,
    SLICE_MODEL,
    SliceReaders,
    after_slice_args,
    build_after_slice,
    build_selection,
    failed_in,
    gold_step_args,
    silver_step_args,
)


def _readers(marks: dict[str, int], newest: dict[str, int], active: list[str]) -> SliceReaders:
    return SliceReaders(marks, {ANY_GAME: max(newest.values(), default=-1), **newest}, active)


def test_only_games_with_rows_after_their_mark_are_built() -> None:
    readers = _readers(
        {"silver_alpha": 10, "silver_beta": 10, "silver_gamma": 14, "silver_quarantine": 10},
        {"alpha": 12, "gamma": 14},  # gamma's rows are ones it has read already; beta has none
        ["alpha", "beta", "gamma"],
    )
    assert build_selection(readers) == ["silver_alpha+", "silver_quarantine+"]


def test_a_reader_without_a_mark_is_built_even_without_rows() -> None:
    readers = _readers({"silver_quarantine": 10}, {}, ["new_game"])  # first build, or a stale mark
    assert build_selection(readers) == ["silver_new_game+"]


def test_an_empty_slice_builds_nothing() -> None:
    readers = _readers({"silver_alpha": 10, "silver_quarantine": 10}, {}, ["alpha"])
    assert build_selection(readers) == []


def test_paused_games_are_not_built() -> None:
    readers = _readers({"silver_alpha": 10, "silver_quarantine": 10}, {"alpha": 11, "beta": 11}, ["alpha"])
    assert build_selection(readers) == ["silver_alpha+", "silver_quarantine+"]


def test_rows_of_an_unknown_game_build_quarantine_only() -> None:
    readers = _readers({"silver_alpha": 10, "silver_quarantine": 10}, {"ghost": 11}, ["alpha"])
    assert build_selection(readers) == ["silver_quarantine+"]


def test_a_reader_without_rows_is_carried_to_the_slices_upper_bound() -> None:
    readers = SliceReaders(
        {"silver_alpha": 10, "silver_beta": 10, "silver_quarantine": 10},
        {ANY_GAME: 12, "alpha": 12},
        ["alpha", "beta"],
        to_version=13,
    )
    # alpha keeps its mark until its own build commits; quarantine reads every game's rows, so
    # alpha's rows are its too; beta had nothing to read
    assert readers.carried() == {"silver_alpha": 10, "silver_beta": 13, "silver_quarantine": 10}


def test_the_refresh_leaves_the_audit_and_the_whole_gold_check_to_dbt_build() -> None:
    args = after_slice_args(["silver_alpha+"])
    excluded = args[args.index("--exclude") + 1 :]
    assert args[:3] == ["build", "--select", "silver_alpha+"]
    assert set(excluded) == {SLICE_MODEL, "tag:audit", GOLD_CHECK}
    assert (PROJECT_DIR / "data-tests" / f"{GOLD_CHECK}.sql").is_file(), (
        "the check excluded is not the project's"
    )
    assert "assert_silver_new_rows_valid" not in excluded  # the cycle's new rows are still checked


def test_split_in_two_silver_builds_the_readers_alone_on_one_thread() -> None:
    args = silver_step_args(["silver_alpha+", "silver_quarantine+"])
    assert args[:4] == ["build", "--select", "silver_alpha", "silver_quarantine"]
    assert args[-2:] == ["--threads", "1"]
    assert {SLICE_MODEL, "tag:audit", GOLD_CHECK} <= set(args)


def test_split_in_two_silver_names_the_silver_check_whenever_a_game_builds() -> None:
    # buildable indirect selection takes a test only when all its parents are selected: the
    # check's parents are every game's silver, so a cycle of one game of two would drop it
    args = silver_step_args(["silver_alpha+", "silver_quarantine+"])
    assert SILVER_CHECK in args[args.index("--select") + 1 : args.index("--exclude")]
    assert (PROJECT_DIR / "data-tests" / f"{SILVER_CHECK}.sql").is_file()
    # a cycle with quarantine alone builds no game: nothing for the check to read
    assert SILVER_CHECK not in silver_step_args(["silver_quarantine+"])


def test_split_in_two_gold_builds_below_the_games_on_its_threads() -> None:
    args = gold_step_args(["silver_alpha+", "silver_beta+", "silver_quarantine+"], threads=3)
    selected = args[args.index("--select") + 1 : args.index("--exclude")]
    assert selected == ["silver_alpha+,path:models/gold", "silver_beta+,path:models/gold"]
    # the silver check ran with silver: only tests whose parents are all this step's gold
    assert args[args.index("--indirect-selection") + 1] == "cautious"
    assert args[-2:] == ["--threads", "3"]


def test_split_in_two_gold_leaves_out_the_games_silver_stopped() -> None:
    selection = ["silver_alpha+", "silver_beta+", "silver_quarantine+"]
    args = gold_step_args(selection, threads=2, stopped=("silver_beta",))
    assert "silver_beta+,path:models/gold" not in args and "silver_alpha+,path:models/gold" in args
    assert gold_step_args(selection, threads=2, stopped=("silver_alpha", "silver_beta")) == []
    assert gold_step_args(["silver_quarantine+"], threads=2) == []  # no game: no gold step


@dataclass
class _Node:
    name: str
    resource_type: str
    parents: list[str] = field(default_factory=list)

    @property
    def depends_on(self) -> Any:
        return SimpleNamespace(nodes=self.parents)


@dataclass
class _Result:
    status: str
    node: _Node


def test_what_a_failed_node_stops_is_what_dbt_build_would_skip() -> None:
    results = [
        _Result("success", _Node("silver_alpha", "model")),
        _Result("error", _Node("silver_beta", "model")),
        _Result("skipped", _Node("silver_gamma", "model")),
        _Result("pass", _Node("not_null_silver_alpha_event_id", "test", ["model.gamelake.silver_alpha"])),
        _Result(
            "fail",
            _Node(
                "assert_silver_new_rows_valid", "test", ["model.gamelake.silver_delta", "seed.gamelake.games"]
            ),
        ),
    ]
    assert failed_in(results) == ("silver_beta", "silver_gamma", "silver_delta")
    assert failed_in(None) == ()


def _steps_of(gold_threads: int, silver_status: str = "success", silver_threads: int = 1) -> list[str]:
    """What a split cycle does, in order: each dbt invocation's command and the versions handed."""
    done: list[str] = []

    def invoke(*args: str) -> Any:
        threads = args[args.index("--threads") + 1] if "--threads" in args else "-"
        done.append(f"dbt {args[0]} threads={threads}")
        results = [_Result(silver_status, _Node("silver_alpha", "model"))]
        return SimpleNamespace(result=SimpleNamespace(results=results), exception=None, success=True)

    build_after_slice(
        invoke,
        ["silver_alpha+"],
        [],
        gold_threads,
        before_gold=lambda: done.append("hand versions"),
        silver_threads=silver_threads,
    )
    return done


def test_the_gold_step_is_handed_silvers_new_versions_after_the_silver_step() -> None:
    # gold reads silver as of the version it is handed; handed before silver's insert, it would
    # read the version before it, whose files the upkeep may already have vacuumed
    assert _steps_of(gold_threads=2) == ["dbt build threads=1", "hand versions", "dbt build threads=2"]
    assert _steps_of(gold_threads=1) == ["dbt build threads=-"]  # one invocation knows silver's +1
    assert _steps_of(gold_threads=2, silver_status="error") == ["dbt build threads=1"]  # no gold step


def test_silver_on_threads_of_their_own_sessions_keeps_the_order_of_the_steps() -> None:
    steps = _steps_of(gold_threads=2, silver_threads=2)
    assert steps == ["dbt build threads=2", "hand versions", "dbt build threads=2"]
    assert silver_step_args(["silver_alpha+"], threads=3)[-2:] == ["--threads", "3"]


@pytest.mark.parametrize(
    ("threads", "refusal"),
    [
        (["--gold-threads", "0"], "--gold-threads 0: give a number of dbt threads, 1 or more"),
        (["--silver-threads", "0"], "--silver-threads 0: give a number of dbt threads, 1 or more"),
        (["--silver-threads", "2", "--gold-threads", "1"], "--gold-threads 2 or more, or --silver-threads 1"),
    ],
)
def test_threads_a_cycle_cannot_run_are_refused_before_spark_starts(threads: list[str], refusal: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "ingest.cli", "refresh", "--continuous", *threads],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert refusal in done.stderr


@pytest.mark.parametrize(
    ("given", "gold_threads", "threads"),
    [
        (None, 2, DEFAULT_SILVER_THREADS),  # the default, where gold has a step of its own
        (None, 1, 1),  # one gold thread: silver and gold in one invocation, on one thread
        (1, 2, 1),
        (3, 2, 3),
    ],
)
def test_silver_threads_default_to_the_refreshs_and_to_one_with_one_gold_thread(
    given: int | None, gold_threads: int, threads: int
) -> None:
    assert silver_threads_for(given, gold_threads) == threads
