"""The job file a command's `--config` names: a local path, or a URI of the cluster's storage
(`hdfs://`, `s3a://`) read through Hadoop's file systems, as a cluster job is given it."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from hudi_cdc.config.models import Config
from hudi_cdc.config.models import load_config as load_local_config
from hudi_cdc.config.yaml_file import is_remote
from hudi_cdc.errors import ConfigError


def load_config(location: str, *, hudi_sql: bool = False) -> Config:
    """The validated job configuration at `location` (`config.models.load_config` for a local file).

    A remote file is read with the session the command runs in (started here when none runs), so
    the cluster's configuration (`HADOOP_CONF_DIR`, `spark.hadoop.*`) reaches the storage; the
    file's own `job.hadoop_conf` cannot, since it is in the file. Errors name `location`.
    `hudi_sql`: the command needs Hudi's SQL (`get_or_create_session`'s), which only a session
    started with it has, so the one started here must have it too.

    Raises:
        ConfigError: the file is missing, a folder, unreadable or invalid.
    """
    if not is_remote(location):
        path = Path(location)
        if path.is_dir():
            raise ConfigError(location, ["a folder, not a file"])
        if path.exists() and not os.access(path, os.R_OK):
            raise ConfigError(location, ["cannot be read: permission denied"])
        return load_local_config(path)

    from hudi_cdc.spark.fs import read_job_file
    from hudi_cdc.spark.session import get_or_create_session

    text = read_job_file(get_or_create_session(app_name="hudi-cdc", hudi_sql=hudi_sql), location)
    # the same checks as a local file's, on a private copy of the text (no other user can read it)
    with tempfile.TemporaryDirectory(prefix="hudi-cdc-config-") as folder:
        copy = Path(folder) / (Path(location).name or "job.yaml")
        copy.write_text(text)
        try:
            return load_local_config(copy)
        except ConfigError as exc:
            raise ConfigError(location, exc.problems) from None
