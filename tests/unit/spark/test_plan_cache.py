"""PlanCache: expressions built once per shape and JVM, bounded, least recently used evicted first."""

from __future__ import annotations

from hudi_cdc.spark.plan_cache import PlanCache


def _counting() -> tuple[PlanCache[str], list[str]]:
    return PlanCache(entries=2), []


def test_a_shape_is_built_once_and_reused() -> None:
    cache, built = _counting()

    def build() -> str:
        built.append("a")
        return f"plan {len(built)}"

    assert cache.get("a", build) == "plan 1"
    assert cache.get("a", build) == "plan 1"
    assert built == ["a"]


def test_another_shape_builds_its_own() -> None:
    cache, _ = _counting()
    assert cache.get(("t", ("schema v1",)), lambda: "v1") == "v1"
    assert cache.get(("t", ("schema v2",)), lambda: "v2") == "v2"
    assert cache.get(("t", ("schema v1",)), lambda: "rebuilt") == "v1"


def test_the_least_recently_used_shape_goes_first() -> None:
    cache, _ = _counting()
    cache.get("a", lambda: "a")
    cache.get("b", lambda: "b")
    cache.get("a", lambda: "a again")  # a is now the most recent
    cache.get("c", lambda: "c")  # evicts b
    assert len(cache) == 2
    assert cache.get("a", lambda: "rebuilt") == "a"
    assert cache.get("b", lambda: "rebuilt") == "rebuilt"
