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


def _named_groups(pattern: str) -> list[re.Match[str]]:
    """Where `pattern` opens a named group `(?<name>` (not a lookbehind, not escaped, not in a class)."""
    found = []
    in_class = False
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            i += 2
            continue
        if in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
            i += 2 if pattern.startswith("[^", i) else 1
            if pattern[i : i + 1] == "]":  # a literal `]` right after `[` or `[^`
                i += 1
            continue
        elif (group := _NAMED_GROUP.match(pattern, i)) is not None:
            found.append(group)
        i += 1
    return found


_NAMED_GROUP = re.compile(r"\(\?<([A-Za-z][A-Za-z0-9]*)>")


def _replace_named_groups(pattern: str, opening: str) -> str:
    out, last = [], 0
    for group in _named_groups(pattern):
        out += [pattern[last : group.start()], opening.format(name=group.group(1))]
        last = group.end()
    return "".join([*out, pattern[last:]])


def python_dialect(pattern: str) -> str:
    """`pattern` as Python's `re` reads it: Java's named group `(?<name>...)` written `(?P<name>...)`,
    the one construct of the common subset the two dialects spell differently."""
    return _replace_named_groups(pattern, "(?P<{name}>")


def without_names(pattern: str) -> str:
    """`pattern` with its named groups made non-capturing: patterns joined by `|` may reuse a name."""
    return _replace_named_groups(pattern, "(?:")


def compiled(pattern: str) -> re.Pattern[str]:
    """`pattern` compiled by Python (named groups in Java's spelling, see `python_dialect`)."""
    with warnings.catch_warnings():
        # Python warns about `[[` and `&&` in classes; `problems` reports both with a fix
        warnings.simplefilter("ignore", FutureWarning)
        return re.compile(python_dialect(pattern))


def problems(pattern: str) -> list[str]:
    """Every construct of `pattern` outside the Python/Java common subset (empty: the pattern is fine).

    Also reports a pattern Python cannot compile. The subset is documented in
    docs/configuration.md (route patterns).
    """
    try:
        compiled(pattern)
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
