"""hudi_cdc: land Debezium change streams from Kafka in Apache Hudi tables, row for row."""

__version__ = "0.1.0"
