"""Where tables, checkpoints and dead letters live: checks that refuse unsafe layouts early.

Two kinds of check: on the names alone (`layout_problems`: duplicate or nested base paths, a
checkpoint or dead-letter folder inside a table), run by the configuration model; and on
the file system (`base_path_problems`: a base path that exists but is not a Hudi table),
run at `validate` for local paths and at run start for every path through Hadoop's
FileSystem.
"""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Literal, Protocol

PathKind = Literal["missing", "file", "dir"]

_SCHEME = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*):(?P<rest>.*)$")
HOODIE = ".hoodie"


def is_local(path: str) -> bool:
    """A plain path or a file: URI."""
    match = _SCHEME.match(path)
    return match is None or match["scheme"].lower() == "file"


def normalize(path: str) -> str:
    """A comparable form: absolute local paths, `scheme://authority/path` without `.`, `..` or a trailing /."""
    if is_local(path):
        rest = _SCHEME.sub(r"\g<rest>", path) if path.lower().startswith("file:") else path
        rest = re.sub(r"^//(localhost)?(?=/)", "", rest)
        return "file:" + os.path.normpath(os.path.abspath(os.path.expanduser(rest)))
    match = _SCHEME.match(path)
    assert match is not None
    rest = match["rest"]
    authority = ""
    if rest.startswith("//"):
        authority, _, rest = rest[2:].partition("/")
        rest = "/" + rest
    return f"{match['scheme'].lower()}://{authority}{posixpath.normpath(rest or '/')}"


def inside(path: str, folder: str) -> bool:
    """Is `path` the folder itself or somewhere under it (both normalized)?"""
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def layout_problems(
    *, base_paths: Sequence[tuple[str, str]], checkpoint_dir: str, dead_letter_path: str
) -> list[str]:
    """Duplicate or nested base paths, and job folders inside a table; `base_paths` is (table, path)."""
    found: list[str] = []
    tables = [(name, normalize(path), i) for i, (name, path) in enumerate(base_paths)]
    for name, path, i in tables:
        for other, other_path, j in tables:
            if j <= i:
                continue
            if path == other_path:
                found.append(
                    f"tables.{j}.base_path: table {other} has the same base_path as table {name}; "
                    "each table needs its own folder"
                )
            elif inside(other_path, path) or inside(path, other_path):
                outer, inner = (name, other) if inside(other_path, path) else (other, name)
                found.append(
                    f"tables.{j}.base_path: table {inner} lies inside table {outer}'s base_path; "
                    "give each table a folder of its own, side by side"
                )
    for field, folder in (("job.checkpoint_dir", checkpoint_dir), ("job.dead_letter_path", dead_letter_path)):
        for name, path, _ in tables:
            if inside(normalize(folder), path):
                found.append(
                    f"{field}: lies inside the base_path of table {name}, where Hudi would treat it as table files; "
                    "put it outside every table's base_path"
                )
    return found


class FileSystemView(Protocol):
    """The little a base-path check needs to know about a file system."""

    def kind(self, path: str) -> PathKind: ...

    def names(self, path: str) -> list[str]: ...


class LocalFiles:
    """The local file system (plain paths and file: URIs)."""

    def kind(self, path: str) -> PathKind:
        local = Path(normalize(path).removeprefix("file:"))
        return "dir" if local.is_dir() else "file" if local.exists() else "missing"

    def names(self, path: str) -> list[str]:
        return sorted(p.name for p in Path(normalize(path).removeprefix("file:")).iterdir())


def base_path_problems(base_paths: Sequence[tuple[str, str]], fs: FileSystemView) -> list[str]:
    """Base paths that exist but are not Hudi tables (a file, or a folder with other files and no .hoodie/)."""
    found: list[str] = []
    for i, (name, path) in enumerate(base_paths):
        kind = fs.kind(path)
        if kind == "file":
            found.append(f"tables.{i}.base_path: table {name}: {path} is a file, not a folder; point it at a new or Hudi folder")
        elif kind == "dir":
            names = fs.names(path)
            if names and HOODIE not in names:
                shown = ", ".join(names[:5]) + (", ..." if len(names) > 5 else "")
                found.append(
                    f"tables.{i}.base_path: table {name}: {path} holds other files ({shown}) and no {HOODIE}/, "
                    "so it is not a Hudi table; point base_path at an empty or new folder, or at the table's own folder"
                )
    return found
