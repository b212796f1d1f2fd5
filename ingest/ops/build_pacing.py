"""How much bronze the next continuous build reads, and when it starts.

A build reads at most ``max_versions`` bronze versions holding at most ``max_rows`` rows, so a
backlog (a refresh started late, a burst) is worked off in steps that fit in the driver's memory
instead of one slice that does not. After a failed build the next one waits longer (doubling up
to ``MAX_BACKOFF_S``) and reads half as many versions and rows, so a build that failed for want
of memory is retried smaller rather than the same size forever. A good build restores both.
"""

from __future__ import annotations

from dataclasses import dataclass

MAX_BACKOFF_S = 300.0


@dataclass
class BuildPacing:
    min_interval: float
    max_versions: int  # 0: no bound
    max_rows: int = 0  # 0: no bound
    failures: int = 0
    backlog_hint: int = 0  # versions behind bronze at the last failure, to halve an unbounded read

    def interval(self) -> float:
        """Seconds from one build's start to the next's."""
        if not self.failures:
            return self.min_interval
        return min(max(self.min_interval, 1.0) * 2**self.failures, MAX_BACKOFF_S)

    def versions(self) -> int:
        """The most bronze versions the next build reads; 0 for no bound."""
        if not self.failures:
            return self.max_versions
        widest = self.max_versions or max(self.backlog_hint, 1)
        return max(1, widest >> self.failures)

    def rows(self) -> int:
        """The most bronze rows the next build reads (at least one version's); 0 for no bound."""
        return max(1, self.max_rows >> self.failures) if self.max_rows else 0

    def failed(self, behind: int) -> None:
        if not self.failures:
            self.backlog_hint = behind
        self.failures += 1

    def succeeded(self) -> None:
        self.failures = 0
        self.backlog_hint = 0
