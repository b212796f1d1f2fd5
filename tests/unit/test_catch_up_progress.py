"""``ingest run --until-caught-up``'s progress line: what it says, and that only a terminal sees it."""

from __future__ import annotations

import io
from types import SimpleNamespace

import pytest

from ingest.core.logs.setup import CLEAR_LINE
from ingest.landing.kafka.lag import Lag, measure_lag
from ingest.landing.records import TopicPartition
from ingest.landing.service.progress import CatchUpProgress, duration, progress_line


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_line_shows_landed_remaining_share_rate_and_eta():
    assert progress_line(12_000, 36_000, 3.0) == "12,000 landed, 36,000 to go (25%), 4,000/s, ETA 9s"


@pytest.mark.parametrize(
    ("landed", "remaining", "elapsed_s", "ending"),
    [
        (0, 500, 2.0, "0 landed, 500 to go (0%), 0/s, ETA ?"),  # nothing landed yet: no rate
        (100, 0, 1.0, "100 landed, 0 to go (100%), 100/s, ETA 0s"),  # caught up
        (0, 0, 0.0, "0 landed, 0 to go (100%), 0/s, ETA 0s"),  # an empty topic, at once
        (10, 5, 0.0, "10 landed, 5 to go (66%), 0/s, ETA ?"),  # no time has passed
        (1_000, 9_000_000, 10.0, "1,000 landed, 9,000,000 to go (0%), 100/s, ETA 25h00m"),
    ],
)
def test_edge_cases_never_divide_by_zero(landed, remaining, elapsed_s, ending):
    assert progress_line(landed, remaining, elapsed_s) == ending


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0, "0s"), (59.4, "59s"), (60, "1m00s"), (185, "3m05s"), (3600, "1h00m"), (7620, "2h07m")],
)
def test_durations_read_at_a_glance(seconds, text):
    assert duration(seconds) == text


def test_on_a_terminal_the_line_is_rewritten_in_place_and_kept_at_the_end():
    terminal = Terminal()
    progress = CatchUpProgress(terminal)
    progress.finish()  # nothing measured yet: nothing to keep
    assert terminal.getvalue() == ""
    progress.count(10)
    progress.show(90)
    progress.count(90)
    progress.show(0)
    progress.finish()
    shown = terminal.getvalue()
    assert shown.count(CLEAR_LINE) == 3 and shown.endswith("\n") and shown.count("\n") == 1
    assert shown.startswith(CLEAR_LINE + "10 landed, 90 to go (10%)")
    assert shown.split(CLEAR_LINE)[-1].startswith("100 landed, 0 to go (100%)")


@pytest.mark.parametrize("stream", [io.StringIO(), None])  # piped or a file (CI); or not catching up
def test_nothing_is_written_off_a_terminal(stream):
    progress = CatchUpProgress(stream)
    progress.count(5)
    progress.show(10)
    progress.finish()
    assert stream is None or stream.getvalue() == ""


class _Watermarks:
    """A consumer whose partitions end at ``high``, with the fetch position at ``position``."""

    def __init__(self, high: int, position: int) -> None:
        self.high, self.position_at = high, position

    def get_watermark_offsets(self, _tp, **_kwargs):
        return 0, self.high

    def position(self, partitions):
        return [SimpleNamespace(offset=self.position_at) for _ in partitions]


def test_the_lag_is_summed_over_owned_partitions():
    ownership = SimpleNamespace(landed_offsets={TopicPartition("t", 0): 49, TopicPartition("t", 1): None})
    assert measure_lag(_Watermarks(100, 60), ownership) == Lag(remaining=50 + 100, caught_up=False)  # type: ignore[arg-type]
    # Only a transaction marker is left past the landed offset: caught up, one offset to go.
    ownership.landed_offsets = {TopicPartition("t", 0): 98}
    assert measure_lag(_Watermarks(100, 100), ownership) == Lag(remaining=1, caught_up=True)  # type: ignore[arg-type]
