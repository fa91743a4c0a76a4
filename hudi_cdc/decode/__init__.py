"""Kafka rows -> typed change events, rejects and tombstones, as Spark SQL (values, schemas, orders, flattened rows, TOAST)."""
