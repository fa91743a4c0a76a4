"""Compaction policy of merge-on-read tables -> Hudi options (trigger strategies of HUDI-1381)."""

from __future__ import annotations

from hudi_cdc.config.models import Compaction
from hudi_cdc.hoodie_keys import (
    ASYNC_COMPACTION,
    INLINE,
    MAX_DELTA_COMMITS,
    MAX_DELTA_SECONDS,
    SCHEDULE_INLINE,
    TRIGGER_STRATEGY,
)


def compaction_options(policy: Compaction) -> dict[str, str]:
    """Inline: schedule and run after a commit; schedule_only: plan only (`hudi-cdc compact` runs it)."""
    return {
        # foreachBatch writes are batch writes: Hudi's async compaction never runs there
        ASYNC_COMPACTION: "false",
        INLINE: str(policy.mode == "inline").lower(),
        SCHEDULE_INLINE: str(policy.mode == "schedule_only").lower(),
        TRIGGER_STRATEGY: policy.strategy,
        MAX_DELTA_COMMITS: str(policy.max_delta_commits),
        MAX_DELTA_SECONDS: str(policy.max_delta_seconds),
    }
