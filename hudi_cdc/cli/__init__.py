"""The `hudi-cdc` command line."""
