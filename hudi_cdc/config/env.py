"""`${VAR}` references in a parsed configuration, replaced from the environment.

Substitution happens AFTER the YAML is parsed, on string values only: a value with quotes,
newlines, `: ` or `#` is taken literally and can never change the document's structure.
Every substituted value is remembered so error messages can mask it (`Substitutions.mask`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# ${NAME} or ${NAME:-default}; `$${` is a literal `${`.
_REFERENCE = re.compile(r"\$\$\{|\$\{(?P<name>[^}:]*)(?::-(?P<default>[^}]*))?\}")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass
class Substitutions:
    """What `substitute` replaced, and the references it could not resolve."""

    values: dict[str, str] = field(default_factory=dict)
    """Variable -> the value put into the document (masked in every error message)."""
    problems: list[str] = field(default_factory=list)
    """One line per unset or malformed reference, naming the field and the variable."""

    def mask(self, text: str) -> str:
        """`text` with every substituted value replaced by its `${VAR}` reference."""
        # a value may be quoted as is, as a Python repr or as JSON (escaped quotes, \\n);
        # longest first, so a form that contains another is masked whole
        forms = [
            (form, name)
            for name, value in self.values.items()
            if value
            for form in {value, repr(value), repr(value)[1:-1], json.dumps(value), json.dumps(value)[1:-1]}
        ]
        for form, name in sorted(forms, key=lambda item: -len(item[0])):
            text = text.replace(form, f"${{{name}}}")
        return text


def substitute(document: Any, environ: Mapping[str, str]) -> tuple[Any, Substitutions]:
    """A copy of a parsed YAML document with `${VAR}` / `${VAR:-default}` replaced in string values."""
    found = Substitutions()
    return _walk(document, (), environ, found), found


def _walk(node: Any, location: tuple[str, ...], environ: Mapping[str, str], found: Substitutions) -> Any:
    if isinstance(node, dict):
        return {key: _walk(value, (*location, str(key)), environ, found) for key, value in node.items()}
    if isinstance(node, list):
        return [_walk(value, (*location, str(i)), environ, found) for i, value in enumerate(node)]
    if isinstance(node, str) and "$" in node:
        return _REFERENCE.sub(lambda m: _resolve(m, ".".join(location) or "<root>", environ, found), node)
    return node


def _resolve(match: re.Match[str], where: str, environ: Mapping[str, str], found: Substitutions) -> str:
    if match.group(0) == "$${":
        return "${"
    name, default = match["name"], match["default"]
    if not _NAME.match(name):
        found.problems.append(
            f"{where}: `${{{name}}}` is not a valid variable reference; write ${{NAME}} or ${{NAME:-default}} "
            "(letters, digits, _), or $${ for a literal ${"
        )
        return match.group(0)
    value = environ.get(name)
    if value is None or (value == "" and default is not None):
        if default is None:
            found.problems.append(
                f"{where}: environment variable {name} is not set; export it, or write ${{{name}:-default}}"
            )
            return match.group(0)
        value = default
    found.values[name] = value
    return value
