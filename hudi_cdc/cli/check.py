"""`hudi-cdc check`: reach every configured service with the configured credentials, a line each."""

from __future__ import annotations

import sys

import click

from hudi_cdc.cli.exit_codes import CONFIGURATION, OK, RETRY, exit_code
from hudi_cdc.cli.options import config_option, json_option
from hudi_cdc.cli.output import fail, output_for
from hudi_cdc.errors import CdcError

EXIT_CODES = {"ok": OK, "unreachable": RETRY, "configuration": CONFIGURATION}
"""A finding's status -> the exit code (`cli.exit_codes`); the worst finding decides."""


@click.command()
@config_option()
@json_option
def check(config_path: str, as_json: bool) -> None:
    """Reach Kafka, the schema registry, Kafka Connect, the metastore and the storage the file names,
    with its credentials and TLS settings: a line each, ok or the error and the fix.

    Exits 0 when every one answered, 75 when a service or the storage did not (run again later),
    2 when the file or a setting is wrong.
    """
    from hudi_cdc.cli.job_file import load_config
    from hudi_cdc.job.services import check_services, exit_status
    from hudi_cdc.spark.session import job_session

    try:
        config = load_config(config_path)
        findings = check_services(config, session=lambda: job_session(config.job, "check"))
    except CdcError as exc:
        fail(type(exc).__name__, str(exc), exit_code=exit_code(exc), as_json=as_json)
    rows = [
        {"component": f.component, "target": f.target, "status": f.status, "detail": f.detail, "fix": f.fix}
        for f in findings
    ]
    status = exit_status(findings)
    output_for(as_json).table(f"{config_path}: {status}", rows, details={"status": status})
    sys.exit(EXIT_CODES[status])
