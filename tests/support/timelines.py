"""Timelines for tests: ActiveCommits held as a list, and a table's timeline read from its files."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class InstantList:
    """ActiveCommits held as a list of instant times, oldest first."""

    instants: tuple[str, ...]
    oldest_uncompacted: str | None

    def count_since(self, instant: str) -> int:
        return sum(1 for t in self.instants if t >= instant)

    def count(self) -> int:
        return len(self.instants)


_INSTANT_FILE = re.compile(r"^(?P<instant>\d{17})(?:_(?P<completed>\d{17}))?(?:\.(?P<action>[a-z_]+))?(?:\.(?P<state>requested|inflight))?$")
DATA_ACTIONS = frozenset({"commit", "deltacommit"})


@dataclass(frozen=True)
class Timeline:
    """A table's timeline as its files say (table version 8+: `.hoodie/timeline/`), read without Hudi.

    Hudi keeps an instant's `requested` and `inflight` files after it completes; an instant is
    pending until a `<instant>_<completion>.<action>` file exists.
    """

    completed: dict[str, tuple[str, str]]
    """instant -> (completion time, action) of every completed instant."""
    pending: dict[str, str]
    """instant -> action of every instant requested or inflight and not completed."""

    def pending_of(self, actions: frozenset[str]) -> set[str]:
        return {i for i, a in self.pending.items() if a in actions}

    def completed_of(self, actions: frozenset[str]) -> dict[str, str]:
        """instant -> completion time of the completed instants of `actions`."""
        return {i: done for i, (done, a) in self.completed.items() if a in actions}


def read_timeline(base_path: Path) -> Timeline:
    """The timeline of the table at `base_path` (empty before its first write)."""
    folder = base_path / ".hoodie" / "timeline"
    try:
        names = [p.name for p in folder.iterdir()] if folder.is_dir() else []
    except OSError:  # a file went away while it was listed
        names = []
    done: dict[str, tuple[str, str]] = {}
    started: dict[str, str] = {}
    for name in names:
        match = _INSTANT_FILE.match(name)
        if match is None:
            continue
        # a COW commit's inflight file is `<instant>.inflight`: its action is implied
        action = match["action"] or "commit"
        if match["completed"]:
            done[match["instant"]] = (match["completed"], action)
        elif match["state"] or match["action"]:
            started.setdefault(match["instant"], action)
    # a compaction completes as a `commit`: it keeps the action it was requested as
    completed = {i: (time, started.get(i, action)) for i, (time, action) in done.items()}
    pending = {i: a for i, a in started.items() if i not in completed}
    return Timeline(completed=completed, pending=pending)
