"""Which games a refresh cycle builds, from what the slice says about its readers."""

from __future__ import annotations

from ingest.core.settings.paths import PROJECT_DIR
from ingest.ops.refresh_selection import (
    ANY_GAME,
    GOLD_CHECK,
    SLICE_MODEL,
    SliceReaders,
    after_slice_args,
    build_selection,
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
