"""Every metric series exists from start-up, at 0, so the first increment is a change an alert sees.

Each exposition is rendered in a fresh interpreter: right after import, before anything counted.
"""

from __future__ import annotations

import subprocess
import sys

from prometheus_client.parser import text_string_to_metric_families

from ingest.core.errors import MESSAGE_STAGES, MessageError
from ingest.core.metrics.prometheus import DropReason
from ingest.core.settings.paths import PROJECT_DIR

RENDER = "import sys; from prometheus_client import generate_latest; from {module} import REGISTRY; " + (
    "sys.stdout.write(generate_latest(REGISTRY).decode())"
)


def _series_at_start(module: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """{(sample name, sorted labels): value} of ``module``'s registry in a new process."""
    result = subprocess.run(
        [sys.executable, "-c", RENDER.format(module=module)],
        cwd=PROJECT_DIR,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(result.stdout)
        for sample in family.samples
    }


def test_every_ingest_series_starts_at_zero():
    series = _series_at_start("ingest.core.metrics.prometheus")
    expected = [
        *[("gamelake_ingest_dead_letters_total", (("stage", s),)) for s in MESSAGE_STAGES],
        *[("gamelake_ingest_decode_errors_total", (("stage", s),)) for s in MESSAGE_STAGES],
        *[("gamelake_ingest_dropped_batches_total", (("reason", r.value),)) for r in DropReason],
        ("gamelake_ingest_rows_landed_total", ()),
        ("gamelake_ingest_expired_offsets_total", ()),
        ("gamelake_ingest_last_commit_timestamp_seconds", ()),
        ("gamelake_ingest_registry_up", ()),
        ("gamelake_ingest_batch_seconds_count", ()),
        ("gamelake_ingest_commit_seconds_count", ()),
    ]
    assert {key: series.get(key) for key in expected} == dict.fromkeys(expected, 0.0)


def test_every_refresh_series_starts_at_zero():
    series = _series_at_start("ingest.ops.refresh_command")
    expected = [
        ("gamelake_refresh_builds_total", (("outcome", "ok"),)),
        ("gamelake_refresh_builds_total", (("outcome", "failed"),)),
        ("gamelake_layer_lag_seconds", (("layer", "silver"),)),
        ("gamelake_layer_lag_seconds", (("layer", "gold"),)),
        ("gamelake_refresh_last_success_timestamp_seconds", ()),
    ]
    assert {key: series.get(key) for key in expected} == dict.fromkeys(expected, 0.0)


def test_the_stage_list_names_every_kind_of_message_error():
    assert set(MESSAGE_STAGES) == {kind.stage for kind in MessageError.__subclasses__()}
    assert len(MESSAGE_STAGES) == len(set(MESSAGE_STAGES))
