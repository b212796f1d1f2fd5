"""Start, check and stop one local server process, tracked by a pid file."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ingest.core.errors import StackError


@dataclass
class Server:
    """A JVM server the project starts on loopback and stops again."""

    name: str
    command: list[str]
    ports: dict[str, int]
    state_dir: Path
    healthy: Callable[[], bool]
    env: dict[str, str] = field(default_factory=dict)
    startup_timeout_s: float = 90.0

    @property
    def log_file(self) -> Path:
        return self.state_dir / f"{self.name}.log"

    @property
    def pid_file(self) -> Path:
        return self.state_dir / f"{self.name}.pid"

    def pid(self) -> int | None:
        """The pid of our running process, or None (a stale pid file is removed)."""
        try:
            pid = int(self.pid_file.read_text().strip())
        except (FileNotFoundError, ValueError):
            return None
        if _alive(pid):
            return pid
        self.pid_file.unlink(missing_ok=True)
        return None


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie child still answers kill(0); treat it as gone.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except FileNotFoundError:
        return False


def start(server: Server) -> bool:
    """Start ``server`` unless it already runs. Returns True when it was started now."""
    if server.pid() is not None:
        if server.healthy():
            return False
        raise StackError(f"{server.name} runs (pid {server.pid()}) but is not healthy: see {server.log_file}")
    for role, port in server.ports.items():
        if not port_is_free(port):
            raise StackError(
                f"{server.name}: {role} port {port} is busy (another process listens there). "
                f"Stop that process or choose another port with the environment variable shown by "
                f"`ingest stack status --help`."
            )
    server.state_dir.mkdir(parents=True, exist_ok=True)
    with open(server.log_file, "ab") as log:
        proc = subprocess.Popen(
            server.command,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            cwd=server.state_dir,
            env={**os.environ, **server.env},
            start_new_session=True,  # outlives `make stack-up`; stopped by `make stack-down`
        )
    server.pid_file.write_text(str(proc.pid))
    _wait_healthy(server, proc)
    return True


def _wait_healthy(server: Server, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + server.startup_timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            server.pid_file.unlink(missing_ok=True)
            raise StackError(
                f"{server.name} exited with code {proc.returncode} during startup: see {server.log_file}"
            )
        if server.healthy():
            return
        time.sleep(0.5)
    stop(server)
    raise StackError(
        f"{server.name} did not become healthy within {server.startup_timeout_s:.0f}s: see {server.log_file}"
    )


def stop(server: Server, grace_s: float = 30.0) -> bool:
    """Stop ``server`` if it runs: SIGTERM, then SIGKILL after ``grace_s``. Returns True if it ran."""
    pid = server.pid()
    if pid is None:
        return False
    os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    if _alive(pid):
        os.killpg(pid, signal.SIGKILL)
        while _alive(pid):
            time.sleep(0.1)
    _reap(pid)
    server.pid_file.unlink(missing_ok=True)
    return True


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError):  # not our child: init reaps it
        os.waitpid(pid, os.WNOHANG)
