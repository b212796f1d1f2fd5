"""Which refresh cycles run Spark's statements interpreted: the small ones whose size is known."""

from pathlib import Path

import pyarrow as pa
from deltalake import write_deltalake

from ingest.ops.bronze_marks import ReaderMarks
from ingest.ops.bronze_watch import BronzeWatch
from ingest.ops.codegen_mode import INTERPRETED_BELOW_ROWS, interpreted, table_rows
from ingest.ops.refresh_command import CycleSize


def test_a_small_cycle_runs_interpreted_and_a_large_one_compiled() -> None:
    assert interpreted(6_000)
    assert not interpreted(INTERPRETED_BELOW_ROWS)
    assert not interpreted(2_000_000)


def test_a_cycle_of_unknown_size_runs_compiled() -> None:
    assert not interpreted(None)
    assert not CycleSize(pending_rows=None).runs_interpreted()


def test_the_row_bound_caps_a_backlog_so_each_bounded_step_runs_interpreted() -> None:
    backlog = CycleSize(max_rows=50_000, pending_rows=1_000_000)
    assert backlog.runs_interpreted()
    assert not CycleSize(max_rows=0, pending_rows=1_000_000).runs_interpreted()


def test_a_bound_of_zero_means_always_compiled() -> None:
    assert not CycleSize(pending_rows=10, interpreted_below=0).runs_interpreted()


def test_the_watch_counts_the_rows_of_the_versions_after_a_build(tmp_path: Path) -> None:
    bronze = tmp_path / "bronze"
    for count in (5, 7, 11):
        write_deltalake(str(bronze), pa.table({"n": list(range(count))}), mode="append")
    watch = BronzeWatch(bronze, ReaderMarks(tmp_path / "silver.db"))
    assert watch.version() == 2
    assert watch.rows_after(0) == 7 + 11
    assert watch.rows_after(2) == 0
    assert watch.rows_after(None) is None  # no build yet: the whole history, size not kept


def test_the_watch_does_not_guess_rows_it_did_not_keep(tmp_path: Path) -> None:
    bronze = tmp_path / "bronze"
    for count in (5, 7, 11):
        write_deltalake(str(bronze), pa.table({"n": list(range(count))}), mode="append")
    watch = BronzeWatch(bronze, ReaderMarks(tmp_path / "silver.db"))
    watch.version()
    watch.forget_up_to(2)
    watch.rows.pop(1)
    assert watch.rows_after(0) is None


def test_a_tables_rows_come_from_its_log_without_spark(tmp_path: Path) -> None:
    table = tmp_path / "bronze"
    assert table_rows(table) is None
    for count in (5, 7):
        write_deltalake(str(table), pa.table({"n": list(range(count))}), mode="append")
    assert table_rows(table) == 12
