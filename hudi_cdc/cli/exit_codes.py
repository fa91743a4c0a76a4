"""The exit codes every command shares, so that a supervisor or a scheduler can tell what to do."""

from __future__ import annotations

from hudi_cdc.errors import CdcError, ConfigError, TransientError

OK = 0
FAILED = 1
"""A person must act; the message says how (a key its records lack, jars missing, a relayout that cannot run)."""
CONFIGURATION = 2
"""The configuration file or the command line is wrong (click's own usage errors exit 2 too): fix it, do not retry."""
REFUSED = 3
"""A snapshot step refused with its reason; `watermark`: not reached before `--timeout`."""
RETRY = 75
"""EX_TEMPFAIL: a service, the storage or one table failed (Kafka away, the registry silent, a table
parked); nothing was lost and the same run later may succeed."""


def exit_code(exc: CdcError) -> int:
    """The code a command exits with after `exc`."""
    if isinstance(exc, ConfigError):
        return CONFIGURATION
    if isinstance(exc, TransientError):
        return RETRY
    return FAILED
