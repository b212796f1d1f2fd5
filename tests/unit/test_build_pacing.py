"""The continuous refresh's pacing: bounded reads, and later and smaller builds after failures."""

from ingest.ops.build_pacing import MAX_BACKOFF_S, BuildPacing


def test_a_healthy_refresh_keeps_its_interval_and_bound() -> None:
    pacing = BuildPacing(min_interval=10, max_versions=60)
    assert (pacing.interval(), pacing.versions()) == (10, 60)


def test_each_failure_doubles_the_wait_and_halves_the_read() -> None:
    pacing = BuildPacing(min_interval=10, max_versions=60)
    seen = []
    for _ in range(3):
        pacing.failed(behind=500)
        seen.append((pacing.interval(), pacing.versions()))
    assert seen == [(20, 30), (40, 15), (80, 7)]


def test_the_wait_is_capped_and_the_read_never_reaches_zero() -> None:
    pacing = BuildPacing(min_interval=10, max_versions=60)
    for _ in range(20):
        pacing.failed(behind=500)
    assert pacing.interval() == MAX_BACKOFF_S
    assert pacing.versions() == 1


def test_an_unbounded_refresh_halves_the_backlog_it_failed_on() -> None:
    pacing = BuildPacing(min_interval=0, max_versions=0)
    assert pacing.versions() == 0
    pacing.failed(behind=400)
    pacing.failed(behind=450)  # the hint is the backlog at the first failure
    assert (pacing.interval(), pacing.versions()) == (4, 100)


def test_a_good_build_restores_interval_and_bound() -> None:
    pacing = BuildPacing(min_interval=10, max_versions=60)
    pacing.failed(behind=500)
    pacing.succeeded()
    assert (pacing.interval(), pacing.versions()) == (10, 60)


def test_the_row_bound_halves_with_each_failure_and_keeps_at_least_one() -> None:
    pacing = BuildPacing(min_interval=10, max_versions=60, max_rows=600_000)
    assert pacing.rows() == 600_000
    pacing.failed(behind=500)
    assert pacing.rows() == 300_000
    for _ in range(30):
        pacing.failed(behind=500)
    assert pacing.rows() == 1
    pacing.succeeded()
    assert pacing.rows() == 600_000
    assert BuildPacing(min_interval=10, max_versions=60).rows() == 0  # no bound


def test_a_commits_rows_come_from_whichever_writer_made_it() -> None:
    from ingest.ops.bronze_watch import commit_rows

    assert commit_rows({"gamelake.rows": "120", "operation": "WRITE"}) == 120  # the ingest
    assert commit_rows({"operationMetrics": {"numOutputRows": "7"}}) == 7  # Spark
    assert commit_rows({"operationMetrics": {"num_added_rows": 3}}) == 3  # delta-rs
    assert commit_rows({"operation": "OPTIMIZE", "operationMetrics": {}}) == 0
