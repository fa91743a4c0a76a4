"""The package root offers the Python API (hudi_cdc.api) without importing Spark until a name is used."""

from __future__ import annotations

import subprocess
import sys

import hudi_cdc
from hudi_cdc import api


def test_the_root_re_exports_the_api() -> None:
    assert set(hudi_cdc.__all__) == {*api.__all__, "__version__"}
    for name in api.__all__:
        assert getattr(hudi_cdc, name) is getattr(api, name), name


def test_importing_the_package_imports_neither_spark_nor_the_job() -> None:
    code = "import sys, hudi_cdc, hudi_cdc.errors; print(sorted(m for m in sys.modules if m.startswith(('pyspark', 'hudi_cdc.job'))))"
    lazy = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert lazy.stdout.strip() == "[]"
    code = "import sys, hudi_cdc; hudi_cdc.start; print('pyspark' in sys.modules, 'hudi_cdc.job.stream' in sys.modules)"
    used = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert used.stdout.split() == ["True", "True"]  # the check above can fail: a name used imports them
