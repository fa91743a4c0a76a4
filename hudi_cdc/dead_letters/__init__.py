"""Rejected records: the dead-letter store (Parquet, with reason and Kafka position) and its operations."""
