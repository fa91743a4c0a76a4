"""A local Hudi table whose storage refuses writes, for the tests of parked tables."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def refusing_writes(table: Path) -> Iterator[None]:
    """The table's local storage refuses every new write while inside, whoever the process runs as.

    A file stands where Hudi creates each write's marker folder (`.hoodie/.temp`, written
    directly with `hoodie.write.markers.type: DIRECT`), so the local file system refuses the
    first file a commit writes (ENOTDIR), before any data file. Unlike a permission bit or
    `chattr +i`, this binds root and needs no capability, so the test never skips.
    """
    temp = table / ".hoodie" / ".temp"
    aside = table / ".hoodie" / ".temp-aside"
    if temp.exists():
        temp.rename(aside)
    temp.write_text("not a folder: writes under it are refused\n")
    try:
        yield
    finally:
        temp.unlink()
        if aside.exists():
            aside.rename(temp)
