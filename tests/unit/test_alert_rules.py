"""The Prometheus alert rules (ops/prometheus) are valid, cover every alert, and fire and clear
as their promtool unit tests say; and those unit tests can fail.

promtool comes from Debian's prometheus package, installed with apt-get when missing (the same
script `make alerts-check` and CI use). A machine where it cannot be installed fails here.
"""

from __future__ import annotations

import functools
import shutil
import subprocess
from pathlib import Path

import yaml

from ingest.core.settings.paths import PROJECT_DIR

RULES_DIR = PROJECT_DIR / "ops" / "prometheus"
ENSURE_PROMTOOL = RULES_DIR / "ensure-promtool.sh"


@functools.cache
def _promtool_path() -> str:
    """promtool, installed first if missing; an assertion (a failed test, not a skip) if it cannot be."""
    found = shutil.which("promtool")
    if found is None:
        install = subprocess.run([ENSURE_PROMTOOL], capture_output=True, text=True, timeout=900)
        found = shutil.which("promtool")
        assert found, f"promtool is missing and {ENSURE_PROMTOOL} could not install it:\n{install.stderr}"
    return found


def _promtool(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [_promtool_path(), *map(str, args)], cwd=PROJECT_DIR, capture_output=True, text=True, timeout=120
    )


def test_the_rules_and_the_scrape_config_are_valid():
    for args in (
        ("check", "rules", RULES_DIR / "alerts.yml"),
        ("check", "config", RULES_DIR / "prometheus.yml"),
    ):
        result = _promtool(*args)
        assert result.returncode == 0, result.stdout + result.stderr


def test_every_alert_fires_and_clears_as_its_unit_tests_expect():
    result = _promtool("test", "rules", RULES_DIR / "alerts_test.yml")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def test_an_alert_expected_to_fire_that_does_not_fails_the_unit_tests(tmp_path):
    shutil.copy(RULES_DIR / "alerts.yml", tmp_path)
    tests = (RULES_DIR / "alerts_test.yml").read_text()
    ingest_never_down = tests.replace('"1x5 0x4 1x5" # down', '"1x15" #', 1)
    assert ingest_never_down != tests
    (tmp_path / "alerts_test.yml").write_text(ingest_never_down)
    result = _promtool("test", "rules", tmp_path / "alerts_test.yml")
    assert result.returncode != 0
    output = result.stdout + result.stderr
    assert "FAILED" in output and "alertname: GamelakeIngestDown, time: 8m" in output


def test_every_alert_is_tested_firing_and_cleared_and_says_what_to_check():
    groups = yaml.safe_load((RULES_DIR / "alerts.yml").read_text())["groups"]
    rules = [rule for group in groups for rule in group["rules"]]
    tests = yaml.safe_load((RULES_DIR / "alerts_test.yml").read_text())["tests"]
    checks = [check for test in tests for check in test["alert_rule_test"]]
    for rule in rules:
        name, annotations = rule["alert"], rule["annotations"]
        seen = [bool(check["exp_alerts"]) for check in checks if check["alertname"] == name]
        assert True in seen and False in seen, f"{name}: test it firing and cleared"
        assert rule["labels"]["severity"] in ("warning", "critical"), name
        assert annotations["summary"] and "doc/" in annotations["description"], name


def test_prometheus_scrapes_both_services_on_loopback():
    config = yaml.safe_load((RULES_DIR / "prometheus.yml").read_text())
    targets = {
        job["job_name"]: [t for static in job["static_configs"] for t in static["targets"]]
        for job in config["scrape_configs"]
    }
    assert targets == {"gamelake-ingest": ["127.0.0.1:9108"], "gamelake-refresh": ["127.0.0.1:9109"]}
    assert config["rule_files"] == ["alerts.yml"]
