"""What Hadoop's local file system costs Spark per file: a process forked for each create and rename.

    python -m bench.local_fs_forks [--calls 300]

Without Hadoop's native library (Maven Central's jars carry none), RawLocalFileSystem runs
`chmod` for the permission of every file it creates and FileContext's rename, which Delta's log
store commits through, runs `readlink` twice to check for links. A flight recording of three
5-game refresh cycles (bench.jvm_cpu with
``--setting spark.driver.extraJavaOptions=-XX:StartFlightRecording=...``; `jfr print --events
jdk.ProcessStart`) counted 1,283 processes started. This times, in the project's Spark session,
one fork (``FileUtil.readLink``) against a call that forks nothing, and a file's create on the
checksummed local file system (the file and its ``.crc``) against the raw one. Printed and
appended to bench/results/local_fs_forks.md with the machine and date.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.results_file import append_section
from ingest.core.settings.paths import PROJECT_DIR
from ingest.core.spark.session import local_session

RESULTS = PROJECT_DIR / "bench" / "results" / "local_fs_forks.md"
WARM_UP = 20


def _per_call_ms(call: Callable[[int], Any], calls: int) -> float:
    for number in range(WARM_UP):
        call(number)
    started = time.perf_counter()
    for number in range(calls):
        call(WARM_UP + number)
    return (time.perf_counter() - started) / calls * 1000


def run(calls: int) -> list[str]:
    with tempfile.TemporaryDirectory(prefix="gamelake-forks-") as scratch:
        spark = local_session(Path(scratch) / "warehouse")
        jvm: Any = spark._jvm
        try:
            local = jvm.org.apache.hadoop.fs.FileSystem.getLocal(spark._jsc.hadoopConfiguration())
            raw = local.getRawFileSystem()
            readme = jvm.java.io.File(str(PROJECT_DIR / "README.md"))

            def create(fs: Any, kind: str) -> Callable[[int], Any]:
                return lambda n: fs.create(
                    jvm.org.apache.hadoop.fs.Path(f"file:{scratch}/{kind}-{n}"), True
                ).close()

            timed = [
                (
                    "`FileUtil.readLink`: one `readlink` process",
                    lambda n: jvm.org.apache.hadoop.fs.FileUtil.readLink(readme),
                ),
                ("`File.exists`: no process (the Python-to-JVM call alone)", lambda n: readme.exists()),
                (
                    "create and close on `LocalFileSystem` (the file and its .crc)",
                    create(local, "checksummed"),
                ),
                ("create and close on `RawLocalFileSystem`", create(raw, "raw")),
            ]
            rows = [f"| {label} | {_per_call_ms(call, calls):.2f} |" for label, call in timed]
            native = jvm.org.apache.hadoop.util.NativeCodeLoader.isNativeCodeLoaded()
            version = jvm.org.apache.hadoop.util.VersionInfo.getVersion()
        finally:
            spark.stop()
    return [
        f"- Hadoop {version}, native library loaded: {native}; {calls} calls each after {WARM_UP} to warm up",
        "",
        "| call | ms per call |",
        "|---|---:|",
        *rows,
        "",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=300)
    args = parser.parse_args()
    append_section(
        RESULTS,
        "Processes Hadoop's local file system forks",
        run(args.calls),
        heading="# What Hadoop's local file system costs Spark per file (bench/local_fs_forks.py)\n",
    )


if __name__ == "__main__":
    main()
