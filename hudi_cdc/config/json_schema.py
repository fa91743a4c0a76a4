"""The configuration file's JSON Schema, for editors (YAML language servers) and CI checks.

Made from the same models `validate` uses, so it cannot drift: each field's docstring is its
description, durations are the text the file holds (`30 seconds`), and wherever the file may
hold a `${VAR}` reference instead of a number or a boolean, the schema allows one. What only
`validate` can check (one field against another, route patterns, base paths) stays its job.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from pydantic import BaseModel, TypeAdapter

from hudi_cdc.config.durations import JSON_PATTERN, format_duration
from hudi_cdc.config.models import Config
from hudi_cdc.config.reference import field_docstrings, sections

ENV_REFERENCE = {"type": "string", "pattern": r"^\$\{[A-Za-z_][A-Za-z0-9_]*(:-[^}]*)?\}$"}
"""A `${VAR}` or `${VAR:-default}` reference (`config.env`), replaced before validation."""
SCHEMA_ID = "https://hudi-cdc.invalid/job.schema.json"


def config_schema() -> dict[str, Any]:
    """The JSON Schema of a job file."""
    schema = Config.model_json_schema(mode="validation")
    docs = {model.__name__: field_docstrings(model) for model in _models()}
    for name, definition in [("Config", schema), *schema.get("$defs", {}).items()]:
        for field, prop in definition.get("properties", {}).items():
            if field in docs.get(name, {}):
                prop["description"] = docs[name][field]
            prop.pop("title", None)
    _allow_references(schema)
    _durations_as_written(schema)
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": SCHEMA_ID, **schema}


def _models() -> list[type[BaseModel]]:
    return [section.model for section in sections()]


def _allow_references(node: Any) -> None:
    """Let numbers and booleans be `${VAR}` references, everywhere in `node`."""
    if isinstance(node, dict):
        for value in node.values():
            _allow_references(value)
        if node.get("type") in ("integer", "number", "boolean"):
            typed = {k: node.pop(k) for k in list(node) if k not in ("description", "default", "title")}
            node["anyOf"] = [typed, ENV_REFERENCE]
    elif isinstance(node, list):
        for value in node:
            _allow_references(value)


def _durations_as_written(node: Any) -> None:
    """Defaults of duration fields as the file writes them (pydantic renders them as ISO `PT30S`)."""
    if isinstance(node, dict):
        if node.get("pattern") == JSON_PATTERN and isinstance(node.get("default"), str):
            node["default"] = format_duration(TypeAdapter(timedelta).validate_python(node["default"]))
        for value in node.values():
            _durations_as_written(value)
    elif isinstance(node, list):
        for value in node:
            _durations_as_written(value)


def main() -> None:
    print(json.dumps(config_schema(), indent=2, sort_keys=True))
