"""The tests mirror the package, and no test module imports another.

Shared builders live in tests/support/, shared fixtures in a conftest.py: a test module that
imports another one drags the other's tests, fixtures and module-scoped set-up into its own
namespace, and ties the two together where nobody looks for it. Read from the source (an AST walk,
imports inside functions included), so it costs no import.
"""

from __future__ import annotations

import ast
from pathlib import Path

import hudi_cdc

TESTS = Path(__file__).parent
PACKAGE = Path(hudi_cdc.__file__).parent


def _module_name(path: Path) -> str:
    parts = path.relative_to(TESTS.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in TESTS.rglob("*.py")}


def _imports(module: str, is_package: bool, source: str, modules: dict[str, Path]) -> set[str]:
    """The `tests` modules `source` imports (`from a import b` counts as a.b when b is a module);
    relative imports are resolved against `module`."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "tests")
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module.split(".") if is_package else module.split(".")[:-1]
                anchor = package[: len(package) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            if base.split(".")[0] != "tests":
                continue
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.add(sub if sub in modules else base)
    return found


def _shared(name: str) -> bool:
    """May a test module import `name`? Only the support library and conftest files."""
    return name == "tests.support" or name.startswith("tests.support.") or name.split(".")[-1] == "conftest"


def _offending(module: str, is_package: bool, source: str, modules: dict[str, Path]) -> list[str]:
    imported = _imports(module, is_package, source, modules)
    return sorted(f"{module} imports {name}" for name in imported if not _shared(name))


def test_test_modules_import_only_the_support_library_and_conftests() -> None:
    modules = _modules()
    found = [
        line
        for name, path in sorted(modules.items())
        for line in _offending(name, path.name == "__init__.py", path.read_text(), modules)
    ]
    assert not found, (
        "a test module imports another test module: move what they share to tests/support/ "
        "(fixtures to a conftest.py)\n" + "\n".join(found)
    )


def test_unit_test_folders_mirror_the_package() -> None:
    unmatched = [
        f"tests/unit/{folder.name}/ has no hudi_cdc/{folder.name}/ package"
        for folder in sorted((TESTS / "unit").iterdir())
        if folder.is_dir() and folder.name != "__pycache__" and not (PACKAGE / folder.name / "__init__.py").is_file()
    ]
    assert not unmatched, "\n".join(unmatched)


def test_every_test_folder_is_a_package() -> None:
    """tests/ is a package: a folder without __init__.py would import its modules by bare name."""
    folders = {p.parent for p in TESTS.rglob("*.py")}
    missing = sorted(str(f.relative_to(TESTS.parent)) for f in folders if not (f / "__init__.py").is_file())
    assert not missing, "folders of tests without an __init__.py: " + ", ".join(missing)


def test_the_walk_sees_test_imports() -> None:
    """The checks can fail: imports of test modules, plain, from and relative, are seen."""
    modules = _modules()
    here = "tests.unit.fold.test_semantics_rules"
    assert _offending(here, False, "from tests.unit.fold.test_collapse import ev", modules) == [
        f"{here} imports tests.unit.fold.test_collapse"
    ]
    assert _offending(here, False, "def f():\n    import tests.unit.decode.test_decode", modules) == [
        f"{here} imports tests.unit.decode.test_decode"
    ]
    assert _offending(here, False, "from . import test_collapse", modules) == [
        f"{here} imports tests.unit.fold.test_collapse"
    ]
    assert _offending(here, False, "from ..decode.test_decode import T0", modules) == [
        f"{here} imports tests.unit.decode.test_decode"
    ]
    allowed = (
        "from tests.support.fold_builders import ev\n"
        "from tests.integration.conftest import ReadTopic\n"
        "from ..avro.conftest import fake"
    )
    assert _offending(here, False, allowed, modules) == []
    assert "tests.support.fold_builders" in modules and "tests.unit.fold.test_collapse" in modules
