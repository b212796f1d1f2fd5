"""The Spark driver's JVM options: the project's own, then an operator's from the environment."""

from __future__ import annotations

from pathlib import Path

from ingest.core.spark import session

OPTIONS = "spark.driver.extraJavaOptions"


def _options() -> list[str]:
    return session.spark_settings(Path("/w"))[OPTIONS].split()


def test_the_driver_runs_the_parallel_collector_on_the_projects_options(monkeypatch):
    monkeypatch.delenv(session.JVM_OPTIONS_VARIABLE, raising=False)
    assert _options() == [
        "-Dderby.system.home=/w",
        session.DRIVER_GC,
        f"-Dlog4j2.configurationFile={session.LOG_SETTINGS}",
    ]


def test_an_operators_jvm_options_come_after_the_projects_own(monkeypatch):
    monkeypatch.setenv(session.JVM_OPTIONS_VARIABLE, " -Xss4m -XX:+AlwaysPreTouch ")
    options = _options()
    assert options[-2:] == ["-Xss4m", "-XX:+AlwaysPreTouch"], "the last of two options wins in the JVM"
    assert session.DRIVER_GC in options


def test_an_operators_collector_replaces_the_projects(monkeypatch):
    monkeypatch.setenv(session.JVM_OPTIONS_VARIABLE, "-XX:+UseG1GC")
    options = _options()
    assert options[-1] == "-XX:+UseG1GC"
    assert session.DRIVER_GC not in options, "the JVM refuses two collectors"
