"""``make run-continuous``: the pipeline live, on the embedded default, until stopped.

The local stack, then three processes side by side: the demo producer (``--rate`` events/s,
forever), ``ingest run`` and ``ingest refresh --continuous``. SIGTERM or Ctrl-C stops them in
the order data flows (producer, ingest, refresh), each with its own clean stop: flush, commit,
finish the build in progress. Freshness: the ingest's /metrics on 9108, the refresh's on 9109.
"""

from __future__ import annotations

import argparse
import subprocess
import sys

from ingest.core.stop_signals import stop_on_signals

STOP_TIMEOUT_S = 180  # a build in progress finishes before refresh exits


def _ingest(*args: str) -> list[str]:
    return [sys.executable, "-m", "ingest.cli", *args]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m gamelake_dev.continuous", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--rate", type=int, default=2000, help="demo events per second (default 2000)")
    parser.add_argument("--min-interval", type=float, default=10.0, help="seconds between builds (10)")
    args = parser.parse_args(argv)
    if subprocess.run(_ingest("stack", "up")).returncode != 0:
        return 1
    commands = {
        "produce": _ingest("produce", "--forever", "--rate", str(args.rate)),
        "ingest": _ingest("run"),
        "refresh": _ingest("refresh", "--continuous", "--min-interval", str(args.min_interval)),
    }
    with stop_on_signals() as stop:
        children = {name: subprocess.Popen(command) for name, command in commands.items()}
        print(
            "run-continuous: producer, ingest and refresh are running; Ctrl-C or SIGTERM stops them",
            flush=True,
        )
        while not stop.is_set():
            ended = [name for name, child in children.items() if child.poll() is not None]
            if ended:
                print(f"run-continuous: {', '.join(ended)} ended; stopping the others", flush=True)
                break
            stop.wait(1)
        return _stop_all(children)


def _stop_all(children: dict[str, subprocess.Popen[bytes]]) -> int:
    worst = 0
    for name, child in children.items():  # in the order data flows
        if child.poll() is None:
            child.terminate()
            try:
                child.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                print(f"run-continuous: {name} did not stop in {STOP_TIMEOUT_S} s; killing it", flush=True)
                child.kill()
                child.wait()
        worst = max(worst, child.returncode if child.returncode > 0 else 0)
    return worst


if __name__ == "__main__":
    sys.exit(main())
