"""`make sql`: query the demo's synced tables with the local Trino (its metastore is kept by `make demo`).

    python -m devkit.sql "select * from shop.customers"
    python -m devkit.sql            # reads one statement per line from stdin
"""

from __future__ import annotations

import sys

from devkit import build_dir
from devkit.services.hms import LocalMetastore
from devkit.services.trino import LocalTrino

DEMO_METASTORE = build_dir() / "run" / "demo" / "hms"


def _print(rows: list[tuple[object, ...]]) -> None:
    for row in rows:
        print(" | ".join("NULL" if v is None else str(v) for v in row))
    print(f"({len(rows)} rows)")


def main(argv: list[str]) -> None:
    statements = [a for a in argv if a.strip()] or None
    if not (DEMO_METASTORE / "metastore_db").exists():
        sys.exit("no demo metastore: run `make demo` first")
    hms = LocalMetastore(directory=DEMO_METASTORE).start(fresh=False)
    try:
        with LocalTrino(hms.uri) as trino:
            print(f"Trino at {trino.url} (catalog hudi); tables: {trino.query('show tables from shop')}")
            for sql in statements or (line for line in sys.stdin if line.strip()):
                print(f"trino> {sql.strip()}")
                try:
                    _print(trino.query(sql.strip().rstrip(";")))
                except Exception as exc:
                    print(f"error: {exc}")
    finally:
        hms.stop()


if __name__ == "__main__":
    main(sys.argv[1:])
