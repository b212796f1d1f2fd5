"""The dbt docs site, finished and served: tests hidden from the default lineage graph.

dbt-docs draws singular and unit tests in the lineage graph by default, and with a few of each
per game they crowd out the models. dbt has no setting for that default, so after
``dbt docs generate`` this rewrites the graph's default resource filter in the generated page,
leaving the tests one tick away in the filter. ``dbt docs serve`` would copy the pristine page
back over it, so the site is served by ``serve`` here (``make docs-serve``), on loopback.

    python -m ingest.ops.docs_site finish [--site target]
    python -m ingest.ops.docs_site serve [--site target] [--port 8580]
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import http.server
import os
import re
import sys
from pathlib import Path

from ingest.core.errors import ConfigError
from ingest.core.settings.paths import PROJECT_DIR

SITE = PROJECT_DIR / os.environ.get("DBT_TARGET_PATH", "target")  # dbt's own variable
PAGES = ("index.html", "static_index.html")
HIDDEN_BY_DEFAULT = ("test", "unit_test")
# the default selection of dbt-docs' graph: `selectorService ... {include:"", ..., resource_types:[...]`
_DEFAULT_TYPES = re.compile(
    r'(factory\("selectorService".{0,200}?include:"",exclude:"".{0,80}?resource_types:\[)([^\]]*)(\])',
    re.S,
)


def hide_tests(page: str, name: str = "index.html") -> str:
    """``page`` with tests and unit tests left out of the graph's default resource filter."""
    found = _DEFAULT_TYPES.search(page)
    if found is None:
        raise ConfigError(
            f"{name}: the dbt-docs graph's default filter was not found; this dbt-docs version "
            "differs from the one ingest/ops/docs_site.py knows: update its pattern"
        )
    kept = [t for t in found.group(2).split(",") if t.strip('"') not in HIDDEN_BY_DEFAULT]
    return page[: found.start(2)] + ",".join(kept) + page[found.end(2) :]


def finish(site: Path = SITE) -> list[Path]:
    """Hide tests in every generated page of ``site``; the pages changed."""
    pages = [site / name for name in PAGES if (site / name).is_file()]
    if not pages:
        raise ConfigError(f"{site} holds no docs site: run `dbt docs generate` first (`make docs`)")
    for page in pages:
        page.write_text(hide_tests(page.read_text(encoding="utf-8"), page.name), encoding="utf-8")
    return pages


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        """A page load is not worth a log line."""


def serve(site: Path, port: int) -> None:
    finish(site)
    handler = functools.partial(_QuietHandler, directory=str(site))
    with http.server.ThreadingHTTPServer(("127.0.0.1", port), handler) as server:
        print(f"docs: http://127.0.0.1:{server.server_address[1]} (Ctrl-C stops)", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            server.serve_forever()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m ingest.ops.docs_site", description=(__doc__ or "").split("\n")[0]
    )
    parser.add_argument("action", choices=["finish", "serve"])
    parser.add_argument("--site", type=Path, default=SITE, help="the dbt target dir (default: target)")
    parser.add_argument("--port", type=int, default=8580, help="port to serve on (default 8580)")
    args = parser.parse_args(argv)
    try:
        if args.action == "finish":
            for page in finish(args.site):
                print(f"docs: {page} (tests hidden from the default graph)")
        else:
            serve(args.site, args.port)
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
