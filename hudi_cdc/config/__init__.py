"""The job's configuration: frozen pydantic models loaded once from YAML, `${VAR}` substitution, durations, route patterns and storage-layout checks."""
