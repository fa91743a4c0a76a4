"""Route patterns: the subset of regex syntax on which Python and Java agree.

A route pattern is used twice: by Spark's Kafka source (`subscribePattern`, java.util.regex)
and by the job itself (Python `re`, `Column.rlike` in the JVM). So a pattern must mean the
same in both dialects. `problems` rejects, at `validate`, the constructs Python accepts but
Java rejects or reads differently; `jvm_problems` compiles them in the JVM at run start.
"""

from __future__ import annotations

import re
import warnings
from typing import Any

# (construct found at a position, why it is refused, what to write instead)
_GROUP_PREFIXES = (
    ("(?P<", "a Python-only named group", "(?<name>...) or a plain group (...)"),
    ("(?P=", "a Python-only back-reference", "\\k<name> or \\1"),
    ("(?P>", "a Python-only construct", "a plain group (...)"),
    ("(?#", "a Python-only comment", "no comment (YAML `#` comments go outside the quotes)"),
    ("(?(", "a Python-only conditional group", "two routes, or an alternation (a|b)"),
)
_PY_ONLY_FLAGS = {"a": "ASCII", "L": "LOCALE"}


def problems(pattern: str) -> list[str]:
    """Every construct of `pattern` outside the Python/Java common subset (empty: the pattern is fine).

    Also reports a pattern Python cannot compile. The subset is documented in
    docs/configuration.md (route patterns).
    """
    try:
        with warnings.catch_warnings():
            # Python warns about `[[` and `&&` in classes; both are reported below with a fix
            warnings.simplefilter("ignore", FutureWarning)
            re.compile(pattern)
    except re.error as exc:
        return [f"pattern {pattern!r} is not a valid regex: {exc}"]
    found: list[str] = []
    in_class = False
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            escaped = pattern[i + 1 : i + 2]
            if escaped == "Z":
                found.append(f"`\\Z` at {i} means a different end in Java; leave it out (routes match the whole topic name)")
            i += 2
            continue
        if in_class:
            if char == "]":
                in_class = False
            elif char == "[":
                found.append(f"`[` inside a character class at {i} is a nested class in Java; escape it as `\\[`")
            elif pattern.startswith("&&", i):
                found.append(f"`&&` inside a character class at {i} is an intersection in Java; escape it as `\\&\\&`")
        elif char == "[":
            in_class = True
            # a `]` right after `[` or `[^` is a literal in both dialects
            i += 2 if pattern.startswith("[^", i) else 1
            if pattern[i : i + 1] == "]":
                i += 1
            continue
        elif char == "(":
            found.extend(_group_problem(pattern, i))
        elif char == "{" and pattern[i + 1 : i + 2] == ",":
            found.append(f"`{{,n}}` at {i} is a Python-only quantifier; write `{{0,n}}`")
        i += 1
    return [f"pattern {pattern!r}: {p}" for p in found]


def _group_problem(pattern: str, i: int) -> list[str]:
    for prefix, what, instead in _GROUP_PREFIXES:
        if pattern.startswith(prefix, i):
            return [f"`{prefix}` at {i} is {what}; write {instead}"]
    flags = re.match(r"\(\?([a-zA-Z]+)[:)]", pattern[i:])
    if flags:
        bad = [f"{flag} ({_PY_ONLY_FLAGS[flag]})" for flag in flags.group(1) if flag in _PY_ONLY_FLAGS]
        if bad:
            return [f"inline flag {', '.join(bad)} at {i} is Python-only; Java knows i, m, s, u, x, d, U"]
    return []


def jvm_problems(jvm: Any, patterns: list[str]) -> list[str]:
    """Compile each pattern with java.util.regex (the dialect Spark's Kafka source uses)."""
    found = []
    for pattern in patterns:
        try:
            jvm.java.util.regex.Pattern.compile(pattern)
        except Exception as exc:  # py4j wraps PatternSyntaxException
            detail = str(exc).strip().splitlines()
            reason = next((line for line in detail if "PatternSyntaxException" in line), detail[-1] if detail else "")
            found.append(f"pattern {pattern!r} is not valid in Java: {reason}")
    return found
