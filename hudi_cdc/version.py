"""The package's version (setup.cfg reads it; the CLI's --version and the build-info metric show it)."""

__version__ = "0.1.0"
