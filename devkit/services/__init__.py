"""Local services for tests and the demo: Kafka, Kafka Connect with Debezium, MariaDB, a schema registry."""

from devkit.services.process import (
    ServiceError,
    ServiceProcess,
    free_port,
    log_tail,
    run_dir,
    started_services,
)

__all__ = ["ServiceError", "ServiceProcess", "free_port", "log_tail", "run_dir", "started_services"]
