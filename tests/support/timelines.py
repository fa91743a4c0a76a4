"""Active timelines without a table: hudi_cdc.hudi.retention.ActiveCommits held as a list."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class InstantList:
    """ActiveCommits held as a list of instant times, oldest first."""

    instants: tuple[str, ...]
    oldest_uncompacted: str | None

    def count_since(self, instant: str) -> int:
        return sum(1 for t in self.instants if t >= instant)
