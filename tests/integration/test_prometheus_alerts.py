"""The shipped alert rules in a real Prometheus that scrapes the running ingest: fire, then clear.

Prometheus (Debian's package, as in production) scrapes the service every second and evaluates
ops/prometheus/alerts.yml with one change: a minute lasts 3 seconds (``for: 5m`` -> ``for: 15s``,
``[5m]`` -> ``[15s]``), so a five-minute story plays in 15 s. The thresholds are the shipped ones.

The story: the ingest's Schema Registry goes away (a cut TCP forwarder) just as producers start
writing with a schema version the service has not seen. Every batch needs that schema, so none
lands, and the lag grows past the 100k records of GamelakeConsumerLagGrowing while
GamelakeSchemaRegistryUnreachable fires too. When the registry is back, the backlog lands, both
alerts clear, and every record is in bronze exactly once. The service's own dashboard, opened in
headless Chromium, shows the story too (.cache/screenshots/dashboard-ingest.png).
"""

from __future__ import annotations

import html
import json
import re
import shutil
import signal
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from confluent_kafka import Producer
from gamelake_dev.demo_schemas import load_version
from gamelake_dev.producer.publish import ensure_topic, register_versions
from gamelake_dev.screenshot import rendered_dom, screenshot

from ingest.core.settings.paths import PROJECT_DIR
from ingest.landing.decode import wire_format
from ingest.landing.service.run_command import DASHBOARD_PANELS
from tests.integration.ingest_support import (
    assert_exactly_once,
    free_port,
    registry_client,
    service_env,
    start_service,
    wait_until,
)
from tests.integration.tcp_switch import TcpSwitch

pytestmark = pytest.mark.integration

RULES = PROJECT_DIR / "ops" / "prometheus" / "alerts.yml"
SCREENSHOTS = PROJECT_DIR / ".cache" / "screenshots"  # kept for a look after the run
# A minute of the rules lasts 3 s here. Not less: in an outage the service updates its lag
# gauge between registry retries, a few seconds apart, and a window must hold two updates.
SECONDS_PER_MINUTE = 3
LAG_GROWING, REGISTRY_DOWN = "GamelakeConsumerLagGrowing", "GamelakeSchemaRegistryUnreachable"


def compress_time(rules: str, seconds_per_minute: int = SECONDS_PER_MINUTE) -> str:
    """The rules with every duration in minutes made ``seconds_per_minute`` seconds a minute."""

    def seconds(minutes: re.Match[str]) -> str:
        return f"{int(minutes.group(2)) * seconds_per_minute}s"

    rules = re.sub(r"(?<=for: )()(\d+)m\b", seconds, rules)
    return re.sub(r"(?<=\[)()(\d+)m(?=\])", seconds, rules)


class Prometheus:
    def __init__(self, workdir: Path, ingest_port: int) -> None:
        self.port = free_port()
        (workdir / "alerts.yml").write_text(compress_time(RULES.read_text()))
        (workdir / "prometheus.yml").write_text(
            "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
            "rule_files: [alerts.yml]\n"
            "scrape_configs:\n"
            "  - job_name: gamelake-ingest\n"
            f"    static_configs: [{{targets: ['127.0.0.1:{ingest_port}']}}]\n"
        )
        binary = shutil.which("prometheus")
        assert binary, "prometheus is missing: ops/prometheus/ensure-promtool.sh installs it"
        self.log = open(workdir / "prometheus.log", "wb")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [
                binary,
                f"--config.file={workdir / 'prometheus.yml'}",
                f"--storage.tsdb.path={workdir / 'data'}",
                f"--web.listen-address=127.0.0.1:{self.port}",
            ],
            stdout=self.log,
            stderr=self.log,
        )

    def _get(self, path: str, **params: str) -> dict:
        url = f"http://127.0.0.1:{self.port}{path}?{urllib.parse.urlencode(params)}"
        with urllib.request.urlopen(url, timeout=5) as response:
            return json.loads(response.read())["data"]

    def query(self, expr: str) -> float | None:
        result = self._get("/api/v1/query", query=expr)["result"]
        return float(result[0]["value"][1]) if result else None

    def alert_states(self) -> dict[str, str]:
        """Every alerting rule's state: inactive, pending or firing."""
        groups = self._get("/api/v1/rules", type="alert")["groups"]
        return {rule["name"]: rule["state"] for group in groups for rule in group["rules"]}

    def ready(self) -> bool:
        try:
            return self.query('up{job="gamelake-ingest"}') == 1
        except OSError:
            return False

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=30)
        self.log.close()


@pytest.fixture
def prometheus_for(tmp_path: Path) -> Iterator:
    started: list[Prometheus] = []

    def start(ingest_port: int) -> Prometheus:
        started.append(Prometheus(tmp_path / "prometheus", ingest_port))
        return started[-1]

    (tmp_path / "prometheus").mkdir()
    yield start
    for server in started:
        server.stop()


def wait_for_alerts(prometheus: Prometheus, state: str, tick=lambda: None, timeout: float = 120) -> None:
    """Until both alerts are in ``state``, calling ``tick`` between looks; on timeout, say what was seen."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        tick()
        states = prometheus.alert_states()
        if states[LAG_GROWING] == state and states[REGISTRY_DOWN] == state:
            return
        time.sleep(0.5)
    seen = {
        "states": {name: states[name] for name in (LAG_GROWING, REGISTRY_DOWN)},
        "lag": prometheus.query("sum(gamelake_ingest_consumer_lag)"),
        "lag_delta_5s": prometheus.query("sum(delta(gamelake_ingest_consumer_lag[5s]))"),
        "registry_up": prometheus.query("gamelake_ingest_registry_up"),
    }
    raise AssertionError(f"alerts not {state} after {timeout} s: {seen}")


def _check_dashboard(ingest_port: int) -> None:
    """The service's own page, in headless Chromium, after the outage: a plot per panel, saved."""
    url = f"http://127.0.0.1:{ingest_port}/dashboard"
    dom = rendered_dom(url, size=(1400, 1000))
    assert dom.count("<svg") == len(DASHBOARD_PANELS)
    assert all(html.escape(panel.title) in dom for panel in DASHBOARD_PANELS)
    assert "no data yet" not in dom, "a panel stayed empty through the outage"
    shot = screenshot(url, SCREENSHOTS / "dashboard-ingest.png", size=(1400, 1000))
    assert shot.stat().st_size > 20_000


def _frames(schema_id: int, count: int, start: int) -> Iterator[bytes]:
    message = load_version(2).message_class
    for n in range(start, start + count):
        payload = message(event_id=f"e-{n}", game_name="space_raiders", gamer_id=f"g-{n % 97}")
        yield wire_format.frame(schema_id, payload.SerializeToString())


def _produce(producer: Producer, topic: str, frames: Iterator[bytes]) -> None:
    for value in frames:
        while True:
            try:
                producer.produce(topic, value=value)
                break
            except BufferError:
                producer.poll(0.05)
    assert producer.flush(60) == 0


def test_lag_and_registry_alerts_fire_in_prometheus_and_clear_on_recovery(
    stack, fresh_topic, tmp_path, prometheus_for
):
    endpoints = stack.endpoints(fresh_topic)
    ensure_topic(endpoints, partitions=1)
    register_versions(endpoints, [3])  # the subject's versions 1..3 are the demo's v1..v3
    registry = registry_client(stack.registry_url)
    known_id, unseen_id = (registry.get_version(endpoints.value_subject, v).schema_id for v in (2, 3))
    assert known_id != unseen_id
    producer = Producer({"bootstrap.servers": stack.bootstrap_servers, "linger.ms": 20})
    _produce(producer, fresh_topic, _frames(known_id, 1000, 0))

    registry_address = urlsplit(stack.registry_url)
    switch = TcpSwitch(registry_address.hostname or "127.0.0.1", registry_address.port or 80)
    ingest_port = free_port()
    registry_url = switch.url + registry_address.path  # Apicurio's Confluent API has a path
    settings = {"metrics_port": ingest_port, "registry_url": registry_url, "registry_retry_backoff_s": 0.2}
    env = service_env(stack, fresh_topic, tmp_path, **settings)
    proc = start_service(env, log=tmp_path / "ingest.log")
    prometheus = prometheus_for(ingest_port)
    try:
        wait_until(prometheus.ready, 60, "Prometheus scraping the ingest")
        wait_until(lambda: prometheus.query("gamelake_ingest_rows_landed_total") == 1000, 60, "1000 rows")
        assert prometheus.alert_states()[LAG_GROWING] == "inactive"

        # the outage: the registry is gone as a schema version the service never saw arrives
        switch.cut()
        produced = 1000

        def produce_more() -> None:
            nonlocal produced
            _produce(producer, fresh_topic, _frames(unseen_id, 5_000, produced))
            produced += 5_000

        wait_for_alerts(prometheus, "firing", produce_more)
        assert proc.poll() is None, "the service must ride out a registry outage"
        assert prometheus.query("gamelake_ingest_rows_landed_total") == 1000
        lag = prometheus.query(f'sum(gamelake_ingest_consumer_lag{{topic="{fresh_topic}"}})')
        assert lag is not None and lag > 100_000

        # recovery: the registry is back, the backlog lands, both alerts clear
        switch.restore()

        wait_for_alerts(prometheus, "inactive")
        wait_until(
            lambda: prometheus.query("gamelake_ingest_rows_landed_total") == produced,
            120,
            "the backlog landed",
        )
        time.sleep(6)  # one more dashboard sample (every 5 s) after the backlog
        _check_dashboard(ingest_port)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        switch.cut()
    assert_exactly_once(tmp_path, stack.bootstrap_servers, fresh_topic)
