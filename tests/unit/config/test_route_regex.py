"""Route patterns must mean the same in Python and in Java: constructs outside the common subset are refused."""

from __future__ import annotations

import pytest

from hudi_cdc.config.route_regex import problems


@pytest.mark.parametrize(
    "pattern",
    [
        r"shop\.inventory\.orders_\d+",
        r"shop\.(inventory|billing)\.orders(_\d+)?",
        r"(?i)shop\..*",
        r"shop\.[a-z_\]]+",
        r"[]a]x",
        r"shop\\Zed",
        r"a{0,3}",
    ],
)
def test_common_subset_is_accepted(pattern: str) -> None:
    assert problems(pattern) == []


@pytest.mark.parametrize(
    ("pattern", "hint"),
    [
        pytest.param(r"(?P<db>\w+)\.t", "(?<name>...)", id="python-named-group"),
        pytest.param(r"(?P<a>x)(?P=a)", "\\k<name>", id="python-backreference"),
        pytest.param(r"shop\..*\Z", "different end in Java", id="backslash-Z"),
        pytest.param(r"a(?#comment)b", "Python-only comment", id="comment"),
        pytest.param(r"(a)?(?(1)b|c)", "conditional", id="conditional"),
        pytest.param(r"a{,3}", "{0,n}", id="open-quantifier"),
        pytest.param(r"(?a)\w+", "ASCII", id="ascii-flag"),
        pytest.param(r"[a[b]", "nested class in Java", id="nested-class"),
        pytest.param(r"[a&&b]", "intersection in Java", id="class-intersection"),
        pytest.param(r"(", "not a valid regex", id="invalid-everywhere"),
    ],
)
def test_python_only_constructs_are_refused_with_what_to_write(pattern: str, hint: str) -> None:
    found = problems(pattern)
    assert found and hint in " ".join(found) and repr(pattern) in found[0]
