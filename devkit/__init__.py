"""The workbench: local services, the demo, the benchmark driver and test-message builders.

Not packaged (the wheel holds only `hudi_cdc/`); used by the Makefile, the tests and the demo
from a checkout.
"""
