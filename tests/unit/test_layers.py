"""The package's imports run one way: from the job down to the vocabulary, with no circles.

Read from the source (an AST walk, imports inside functions included), so a new import that runs
back up fails here before it tangles the house.
"""

from __future__ import annotations

import ast
from pathlib import Path

import hudi_cdc

PACKAGE = Path(hudi_cdc.__file__).parent

LAYERS: tuple[frozenset[str], ...] = (
    # the vocabulary: errors, the change-event contract, the names of Hudi's keys
    frozenset({"errors", "events", "hoodie_keys", "version"}),
    frozenset({"config"}),
    frozenset({"spark"}),
    frozenset({"commit"}),
    frozenset({"kafka"}),
    frozenset({"avro"}),
    frozenset({"decode"}),
    frozenset({"hudi"}),
    frozenset({"fold"}),
    frozenset({"dead_letters"}),
    frozenset({"relay"}),
    frozenset({"job"}),
    frozenset({"api"}),  # the public Python API: functions over the job
    frozenset({"cli"}),
    # `python -m hudi_cdc`: the command line; the package root re-exports the API (imported on use)
    frozenset({"__main__", "hudi_cdc"}),
)
"""Bottom to top: a module may import its own layer and those below it."""


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in PACKAGE.rglob("*.py")}


def _imports(path: Path, modules: dict[str, Path]) -> set[str]:
    """The hudi_cdc modules `path` imports (`from a import b` counts as a.b when b is a module)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "hudi_cdc")
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "hudi_cdc":
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                found.add(sub if sub in modules else node.module)
    return found


def _rank(module: str) -> int:
    inner = module.removeprefix("hudi_cdc.") if module != "hudi_cdc" else "hudi_cdc"
    for i, layer in enumerate(LAYERS):
        if inner in layer:
            return i
    head = inner.split(".")[0]
    for i, layer in enumerate(LAYERS):
        if head in layer:
            return i
    raise AssertionError(f"{module} belongs to no layer: add its package to LAYERS")


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(path, modules) - {name} for name, path in modules.items()}


def test_every_import_runs_down_the_layers() -> None:
    upward = [
        f"{module} (layer {_rank(module)}) imports {target} (layer {_rank(target)})"
        for module, targets in sorted(_graph().items())
        for target in sorted(targets)
        if _rank(target) > _rank(module)
    ]
    assert not upward, "imports that run back up:\n" + "\n".join(upward)


def test_no_import_circles() -> None:
    graph = _graph()
    state: dict[str, int] = {}  # 1: on the path, 2: done
    circles: list[list[str]] = []

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                circles.append([*path[path.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt, [*path, nxt])
        state[node] = 2

    for start in sorted(graph):
        if start not in state:
            visit(start, [start])
    assert not circles, "import circles:\n" + "\n".join(" -> ".join(c) for c in circles)


def test_the_walk_sees_imports() -> None:
    """The check can fail: a module known to import another is seen doing so."""
    graph = _graph()
    assert "hudi_cdc.job.table_batch" in graph["hudi_cdc.job.pipeline"]
    assert "hudi_cdc.config.models" in graph["hudi_cdc.hudi.compaction"]
    assert _rank("hudi_cdc.cli.console") > _rank("hudi_cdc.job.stream") > _rank("hudi_cdc.decode.records")
    assert "hudi_cdc.api" in graph["hudi_cdc"] and _rank("hudi_cdc") > _rank("hudi_cdc.api")
