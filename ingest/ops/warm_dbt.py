"""dbt invoked in this process with its project parsed once: the continuous refresh's runner.

Each ``dbtRunner().invoke`` loads the project again (partial parsing still reads every file,
checks it, and writes target/manifest.json), and a refresh cycle makes two or three invocations
(the slice, then the games with rows in it: their silver, then their gold). dbt takes a parsed
manifest instead (``dbtRunner(manifest=...)``), so the refresh parses once and reuses it while
the project's files and the ``--vars`` it parsed with are unchanged: a file edited, added or
removed under the project (``ingest games sync`` adding a game, a seed edit) parses it again
before the next call.

dbt's unit tests check a model's SQL against fixed inputs, so on one parse their outcome cannot
change: once every unit test of the parse has passed, later builds leave them out (about 0.9 s a
cycle at 5,000 events/s, bench/results/freshness.md), and a new parse runs them again.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# what dbt reads to build its manifest (the profile is read on every invocation anyway)
PROJECT_PARTS = (
    "dbt_project.yml",
    "selectors.yml",
    "packages.yml",
    "models",
    "macros",
    "seeds",
    "data-tests",
)
UNIT_TESTS = "test_type:unit"


def project_stamp(project: Path) -> tuple[int, int]:
    """(number of files, newest modification) of what dbt parses under ``project``."""
    count, newest = 0, 0
    for path in _files(project):
        count += 1
        newest = max(newest, path.stat().st_mtime_ns)
    return count, newest


def _files(project: Path) -> Iterator[Path]:
    for part in PROJECT_PARTS:
        root = project / part
        if root.is_file():
            yield root
        elif root.is_dir():
            for folder, _, names in os.walk(root):
                yield from (Path(folder) / name for name in names)


def _vars_given(args: tuple[str, ...]) -> str | None:
    return args[args.index("--vars") + 1] if "--vars" in args else None


@dataclass
class WarmDbt:
    """``invoke("build", "--select", ...)`` on ``project``'s ``target``, reusing one parse."""

    project: Path
    profiles: Path
    target: str = "local"
    callbacks: list[Callable[[Any], None]] = field(default_factory=list)
    parses: int = 0
    _manifest: Any = None
    _parsed_for: tuple[tuple[int, int], str | None] | None = None
    _unit_tests_passed: set[str] = field(default_factory=set)  # of the current parse

    def invoke(self, *args: str) -> Any:
        """dbt's result (``dbtRunnerResult``) of ``dbt <args>``."""
        from dbt.cli.main import dbtRunner

        if args[0] not in ("seed", "parse"):
            self._parse_if_changed(_vars_given(args))
        manifest = self._manifest if args[0] not in ("seed", "parse") else None
        if args[0] == "build" and self._every_unit_test_passed():
            args = excluding(args, UNIT_TESTS)
        result = dbtRunner(manifest=manifest, callbacks=self.callbacks).invoke([*args, *self._common()])
        if args[0] == "seed":
            self._manifest = None  # a seed run may follow an edit of the seed: parse before the next
        elif args[0] == "build" and manifest is not None:
            self._unit_tests_passed |= passed_unit_tests(result)
        return result

    def _every_unit_test_passed(self) -> bool:
        known = set(getattr(self._manifest, "unit_tests", None) or ())
        return bool(known) and known <= self._unit_tests_passed

    def _parse_if_changed(self, given_vars: str | None) -> None:
        from dbt.cli.main import dbtRunner

        wanted = (project_stamp(self.project), given_vars)
        if self._manifest is not None and wanted == self._parsed_for:
            return
        extra = ["--vars", given_vars] if given_vars else []
        parsed = dbtRunner(callbacks=self.callbacks).invoke(["parse", *extra, *self._common()])
        self.parses += 1
        # a failed parse leaves no manifest: the invocation parses itself and reports the error
        self._manifest = parsed.result if parsed.success else None
        self._parsed_for = wanted if parsed.success else None
        self._unit_tests_passed = set()

    def _common(self) -> list[str]:
        return [
            "--project-dir",
            str(self.project),
            "--profiles-dir",
            str(self.profiles),
            "--target",
            self.target,
        ]


def excluding(args: tuple[str, ...], selector: str) -> tuple[str, ...]:
    """dbt ``args`` with ``selector`` added to their ``--exclude`` (one ``--exclude`` takes many)."""
    if "--exclude" not in args:
        return (*args, "--exclude", selector)
    at = args.index("--exclude") + 1
    return (*args[:at], selector, *args[at:])


def passed_unit_tests(result: Any) -> set[str]:
    """The unit tests that passed in a ``dbtRunnerResult``."""
    results = getattr(result.result, "results", None) or ()
    return {
        r.node.unique_id for r in results if r.node.resource_type == "unit_test" and str(r.status) == "pass"
    }
