"""`python -m hudi_cdc ...` and `spark-submit .../hudi_cdc/__main__.py ...`: the `hudi-cdc` command line.

spark-submit runs a Python file, not a module: `hudi-cdc submit-file` prints this file's path in
the installed package, so a cluster job needs no checkout (docs/deployment.md).
"""

import sys

if not __package__:
    # Run as a file: Python put this package's own folder first on sys.path, where its
    # subpackages (`kafka`, `spark`, `hudi`...) would shadow libraries of the same name.
    here = sys.path[0]
    sys.path[:] = [p for p in sys.path if p != here]

from hudi_cdc.cli.console import main

if __name__ == "__main__":
    main()
