"""Gold's marks handed to a refresh build (ingest/ops/gold_marks.py): the largest silver_version
in a gold table's files, or null once silver's log no longer holds the commits after it, so the
build recomputes from a pinned snapshot rather than fail reading a change feed that is gone."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake

from ingest.landing.delta.table_location import TableLocation
from ingest.ops.gold_marks import feed_kept_after, gold_readers, handed_marks

SILVER = Path("silver.db") / "silver_alpha"


def _silver_commits(tables: Path, times: int) -> None:
    for n in range(times):
        write_deltalake(
            str(tables / SILVER),
            pa.table({"n": [n]}),
            mode="append",
            configuration={"delta.logRetentionDuration": "interval 0 hours"},
        )


def _gold(tables: Path, kind: str, marks: list[int]) -> None:
    rows = pa.table(
        {
            "gamer_id": [f"g{n}" for n in range(len(marks))],
            "silver_version": marks,
            "last_purchase_at": pa.nulls(len(marks), pa.timestamp("us", "UTC")),  # player_agg reads it
        }
    )
    write_deltalake(str(tables / "gold.db" / f"gold_alpha_{kind}"), rows, mode="append")


def _clean_up_to_latest(tables: Path) -> None:
    table = DeltaTable(str(tables / SILVER))
    table.create_checkpoint()
    table.cleanup_metadata()


def test_a_mark_is_handed_while_silvers_log_holds_the_commit_after_it(tmp_path: Path) -> None:
    _silver_commits(tmp_path, 4)  # versions 0-3
    _gold(tmp_path, "player_agg", [1, 2])
    _gold(tmp_path, "daily_active", [3])
    assert handed_marks(gold_readers(tmp_path, "alpha")) == {
        "gold.gold_alpha_player_agg": 2,
        "gold.gold_alpha_daily_active": 3,
    }


def test_a_mark_older_than_silvers_log_is_handed_as_null(tmp_path: Path) -> None:
    _silver_commits(tmp_path, 4)
    _gold(tmp_path, "player_agg", [1])  # read up to 1: needs commit 2 on
    _gold(tmp_path, "daily_active", [3])  # read everything: needs commit 4, not written yet
    _clean_up_to_latest(tmp_path)  # silver's log: a checkpoint at 3 and commit 3
    assert handed_marks(gold_readers(tmp_path, "alpha")) == {
        "gold.gold_alpha_player_agg": None,
        "gold.gold_alpha_daily_active": 3,
    }
    _silver_commits(tmp_path, 1)  # commit 4: the caught-up table reads it from the change feed
    assert handed_marks(gold_readers(tmp_path, "alpha"))["gold.gold_alpha_daily_active"] == 3


def test_the_commit_after_a_mark_kept_past_a_cleanup_keeps_the_feed(tmp_path: Path) -> None:
    _silver_commits(tmp_path, 3)  # 0-2
    _clean_up_to_latest(tmp_path)  # commit 2 and its checkpoint stay
    _silver_commits(tmp_path, 1)  # 3
    silver = TableLocation.of(tmp_path / SILVER)
    assert not feed_kept_after(silver, 0)
    assert feed_kept_after(silver, 1)  # commit 2 is the first its feed reads
    assert feed_kept_after(silver, 3)  # nothing after it yet
