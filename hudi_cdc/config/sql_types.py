"""Spark SQL type names as a table's `columns` declare them, checked without a JVM (at `validate`).

Spark parses the declarations at run time (`decode.debezium_types.declared_type`); a typo found
there would stop a running job. This reads the same grammar (Spark's `dataType` rule: primitive
names, `decimal(p, s)`, `char(n)`, `array<...>`, `map<..., ...>`, `struct<name: type, ...>`,
intervals) so that `hudi-cdc validate` refuses what Spark would refuse.
"""

from __future__ import annotations

import re

PRIMITIVES = frozenset(
    {
        "boolean", "tinyint", "byte", "smallint", "short", "int", "integer", "bigint", "long", "float",
        "real", "double", "date", "timestamp", "timestamp_ntz", "timestamp_ltz", "string", "binary", "void",
    }
)  # fmt: skip
_SIZED = {"decimal": 2, "dec": 2, "numeric": 2, "char": 1, "character": 1, "varchar": 1}
"""Types that take parameters in parentheses, and how many at most."""
_INTERVAL_UNITS = frozenset({"year", "month", "day", "hour", "minute", "second"})
_TOKEN = re.compile(r"\s*(`[^`]*`|'[^']*'|\"[^\"]*\"|[A-Za-z_][A-Za-z0-9_]*|[0-9]+|[<>(),:]|\S)")


class _Refused(ValueError):
    pass


class _Parser:
    def __init__(self, text: str) -> None:
        self.tokens = [t for t in _TOKEN.findall(text) if t.strip()]
        self.at = 0

    def peek(self) -> str | None:
        return self.tokens[self.at] if self.at < len(self.tokens) else None

    def take(self, expected: str | None = None) -> str:
        token = self.peek()
        if token is None:
            raise _Refused(f"ends early{f', expected {expected!r}' if expected else ''}")
        if expected is not None and token.lower() != expected:
            raise _Refused(f"expected {expected!r}, found {token!r}")
        self.at += 1
        return token

    def data_type(self) -> None:
        name = self.take().lower()
        if name == "array":
            self.take("<")
            self.data_type()
            self.take(">")
        elif name == "map":
            self.take("<")
            self.data_type()
            self.take(",")
            self.data_type()
            self.take(">")
        elif name == "struct":
            self.struct_fields()
        elif name == "interval":
            self.interval()
        elif name in _SIZED:
            self.parameters(name)
        elif name not in PRIMITIVES:
            raise _Refused(f"{name!r} is not a Spark SQL type")

    def struct_fields(self) -> None:
        self.take("<")
        if self.peek() == ">":
            self.take()
            return
        while True:
            field = self.take()
            if not (field.startswith("`") or re.fullmatch(r"[A-Za-z_0-9]+", field)):
                raise _Refused(f"{field!r} is not a field name")
            if self.peek() == ":":
                self.take()
            self.data_type()
            if (self.peek() or "").lower() == "not":
                self.take()
                self.take("null")
            if (self.peek() or "").lower() == "comment":
                self.take()
                self.take()  # the comment's text (a quoted string)
            if self.take() == ">":
                return
            self.at -= 1
            self.take(",")

    def parameters(self, name: str) -> None:
        if self.peek() != "(":
            if name in ("char", "character", "varchar"):
                raise _Refused(f"{name} needs a length, e.g. {name}(10)")
            return
        self.take("(")
        count = 0
        while True:
            if not self.take().isdigit():
                raise _Refused(f"{name}(...) takes whole numbers")
            count += 1
            if self.take() == ")":
                break
            self.at -= 1
            self.take(",")
        if count > _SIZED[name]:
            raise _Refused(f"{name} takes at most {_SIZED[name]} number(s)")

    def interval(self) -> None:
        if (self.peek() or "").lower() in _INTERVAL_UNITS:
            self.take()
            if (self.peek() or "").lower() == "to":
                self.take()
                if self.take().lower() not in _INTERVAL_UNITS:
                    raise _Refused("an interval ends with a unit (year ... second)")


def type_problem(text: str) -> str | None:
    """Why `text` is not a Spark SQL data type, or None when Spark's parser would read it."""
    parser = _Parser(text)
    try:
        parser.data_type()
        if parser.peek() is not None:
            raise _Refused(f"unexpected {parser.peek()!r} after the type")
    except _Refused as refused:
        return f"{text!r}: {refused}; write a Spark SQL type such as bigint, string, decimal(10,2), timestamp, array<string>"
    return None
