"""Kafka as the job reads it: reachability, routing topics to tables, headers, lag, gaps and Spark's offset log."""
