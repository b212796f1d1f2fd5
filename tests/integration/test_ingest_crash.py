"""SIGKILL at each named point of the landing path, and at random times: no duplicates, no gaps."""

from __future__ import annotations

import random
import signal

import pytest
from deltalake import DeltaTable
from gamelake_dev.producer.datagen import EventGenerator
from gamelake_dev.producer.publish import publish

from ingest.landing.decode import wire_format as wire
from tests.integration.ingest_support import (
    assert_exactly_once,
    produce_raw,
    run_service,
    service_env,
    start_service,
)

pytestmark = pytest.mark.integration
COUNT = 8000


def _produce(stack, topic: str) -> None:
    events = EventGenerator(["space_raiders", "kart_legends"], [1, 2, 3], seed=21).events(COUNT)
    publish(stack.endpoints(topic), events, [1, 2, 3], partitions=6, progress=False)
    # poison spread over partitions, so dead letters are part of every crash
    for partition in range(6):
        produce_raw(
            stack.bootstrap_servers, topic, [(b"p", b"junk"), (b"p", wire.frame(1, b"\xff"))], partition
        )


@pytest.mark.parametrize("point", ["decoded", "files_written", "dead_letters_written", "delta_committed"])
def test_sigkill_at_a_named_point_then_restart_lands_everything_once(stack, fresh_topic, tmp_path, point):
    _produce(stack, fresh_topic)
    env = service_env(stack, fresh_topic, tmp_path, flush_rows=700)
    code = run_service(env, hooks=f"kill@{point}:3", log=tmp_path / "ingest.log")
    assert code == -signal.SIGKILL
    bronze_dir = tmp_path / "bronze" / "game_events"
    if point == "files_written":  # the killed batch's files exist but were never committed
        on_disk = {p.relative_to(bronze_dir).as_posix() for p in bronze_dir.rglob("*.parquet")}
        assert {n.rsplit("/", 1)[-1] for n in on_disk} - {
            u.rsplit("/", 1)[-1] for u in DeltaTable(str(bronze_dir)).file_uris()
        }
    assert run_service(env, log=tmp_path / "ingest.log") == 0
    assert_exactly_once(tmp_path, stack.bootstrap_servers, fresh_topic)


@pytest.mark.slow
def test_sigkill_at_random_moments_repeatedly_then_restart_lands_everything_once(
    stack, fresh_topic, tmp_path
):
    _produce(stack, fresh_topic)
    env = service_env(stack, fresh_topic, tmp_path, flush_rows=500)
    rng = random.Random(1234)
    for _ in range(4):
        proc = start_service(
            env, hooks=f"kill-after:{rng.uniform(2.0, 5.0):.2f}", log=tmp_path / "ingest.log"
        )
        proc.wait(timeout=120)
    assert run_service(env, log=tmp_path / "ingest.log") == 0
    assert_exactly_once(tmp_path, stack.bootstrap_servers, fresh_topic)
