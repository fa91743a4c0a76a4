"""Log handlers for the entry points (cli/, jobs/); library modules only call getLogger.

Two formats: `text`, one line per record for people, and `json`, one JSON object per line for log
pipelines, with a record's structured fields (`extra={"fields": {...}}`, as the per-table batch
line carries them) as keys of their own. The JSON formatter is a few lines over the standard
library: a dependency (python-json-logger) would add nothing these lines do not do.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any, Literal

LogFormat = Literal["text", "json"]
FIELDS = "fields"
"""The `extra` key under which a log call passes structured fields (a dict)."""
_TEXT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class JsonFormatter(logging.Formatter):
    """One JSON object per record: time (UTC, ISO 8601), level, logger, message, the record's fields, error."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        fields = getattr(record, FIELDS, None)
        if isinstance(fields, dict):
            entry.update({k: v for k, v in fields.items() if k not in entry})
        if record.exc_info:
            entry["error"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str, ensure_ascii=False)


def configure(level: str = "INFO", log_format: LogFormat = "text") -> None:
    """Records on stderr in `log_format`; Spark/py4j chatter kept at WARNING."""
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter() if log_format == "json" else logging.Formatter(_TEXT))
    # like basicConfig always did: nothing changes when the process already has handlers (a test runner)
    logging.basicConfig(level=level.upper(), handlers=[handler])
    for noisy in ("py4j", "pyspark"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
