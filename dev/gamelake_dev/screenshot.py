"""A page as headless Chromium renders it: a PNG screenshot, or the DOM after scripts ran.

Used by the dashboard's browser test, and for the docs' pictures of a running service or
of the dbt docs site. From the shell::

    python -m gamelake_dev.screenshot http://127.0.0.1:9108/dashboard dashboard.png --size 1200x900
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from ingest.core.errors import IngestError

Size = tuple[int, int]

CHROMIUM_FLAGS = [
    "--headless=new",
    "--no-sandbox",  # CI runs as root, where Chromium's sandbox refuses to start
    "--disable-gpu",
    "--hide-scrollbars",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def find_chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        raise IngestError("headless Chromium is needed; `chromium` is not on PATH: apt-get install chromium")
    return found


def screenshot(url: str, path: Path, size: Size = (1200, 900), virtual_time_ms: int = 0) -> Path:
    """Save ``url`` as a PNG at ``path``; ``virtual_time_ms`` lets a scripted page settle first."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    result = _chromium(url, size, virtual_time_ms, f"--screenshot={path.resolve()}")
    if not path.is_file() or path.stat().st_size == 0:
        raise IngestError(f"chromium wrote no screenshot of {url}: {result.stderr[-2000:]}")
    return path


def rendered_dom(url: str, size: Size = (1200, 900), virtual_time_ms: int = 0) -> str:
    """The page's DOM, serialized after load (and ``virtual_time_ms`` of its timers)."""
    return _chromium(url, size, virtual_time_ms, "--dump-dom").stdout


def _chromium(url: str, size: Size, virtual_time_ms: int, action: str) -> subprocess.CompletedProcess[str]:
    # A throwaway profile: runs in parallel do not share a lock, and nothing is left in $HOME.
    settle = [f"--virtual-time-budget={virtual_time_ms}"] if virtual_time_ms else []
    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile:
        command = [find_chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={profile}"]
        command += [f"--window-size={size[0]},{size[1]}", *settle, action, url]
        result = subprocess.run(command, capture_output=True, text=True, timeout=180)
    if result.returncode != 0:
        raise IngestError(f"chromium exited {result.returncode} on {url}: {result.stderr[-2000:]}")
    return result


def main(argv: list[str] | None = None) -> int:
    summary = __doc__.split("\n")[0]
    parser = argparse.ArgumentParser(prog="python -m gamelake_dev.screenshot", description=summary)
    parser.add_argument("url")
    parser.add_argument("path", type=Path, help="where the PNG goes")
    parser.add_argument("--size", default="1200x900", help="window WIDTHxHEIGHT (default 1200x900)")
    parser.add_argument("--wait-ms", type=int, default=0, help="virtual time a scripted page gets to settle")
    args = parser.parse_args(argv)
    width, _, height = args.size.partition("x")
    saved = screenshot(args.url, args.path, (int(width), int(height)), args.wait_ms)
    print(f"screenshot: {saved} ({saved.stat().st_size:,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
