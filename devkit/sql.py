"""`make sql`: query the demo's synced tables through the metastore `make demo` keeps.

    python -m devkit.sql "select * from shop.orders_rt"                  # PrestoDB, catalog hive
    python -m devkit.sql --engine trino "select * from shop.customers"   # Trino, catalog hudi
    python -m devkit.sql                                                 # one statement per line from stdin

PrestoDB reads merge-on-read `_rt` as the merged snapshot (tables at `table_version: 6`, as in
the demo); Trino reads `_rt` like `_ro`. See docs/querying.md.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from devkit import build_dir
from devkit.services.hms import LocalMetastore
from devkit.services.presto import LocalPresto
from devkit.services.trino import LocalTrino

DEMO_METASTORE = build_dir() / "run" / "demo" / "hms"
Query = Callable[[str], list[tuple[object, ...]]]


@contextmanager
def engine(name: str, metastore_uri: str) -> Iterator[Query]:
    """A started engine on the metastore, as a function from SQL to rows."""
    if name == "presto":
        with LocalPresto(metastore_uri) as presto:
            print(f"PrestoDB at {presto.url} (catalog hive)")
            yield lambda sql: presto.query(sql, catalog="hive")
    else:
        with LocalTrino(metastore_uri) as trino:
            print(f"Trino at {trino.url} (catalog hudi)")
            yield trino.query


def _print(rows: list[tuple[object, ...]]) -> None:
    for row in rows:
        print(" | ".join("NULL" if v is None else str(v) for v in row))
    print(f"({len(rows)} rows)")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m devkit.sql", description=__doc__.splitlines()[0])
    parser.add_argument("--engine", choices=("presto", "trino"), default="presto")
    parser.add_argument("statements", nargs="*", help="SQL statements (default: one per line from stdin)")
    args = parser.parse_args(argv)
    if not (DEMO_METASTORE / "metastore_db").exists():
        sys.exit("no demo metastore: run `make demo` first")
    failed = 0
    hms = LocalMetastore(directory=DEMO_METASTORE).start(fresh=False)
    try:
        with engine(args.engine, hms.uri) as query:
            for sql in [s for s in args.statements if s.strip()] or (
                line for line in sys.stdin if line.strip()
            ):
                print(f"{args.engine}> {sql.strip()}")
                try:
                    _print(query(sql.strip().rstrip(";")))
                except Exception as exc:
                    failed += 1
                    print(f"error: {exc}")
    finally:
        hms.stop()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
