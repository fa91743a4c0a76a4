"""What a batch did and what a table has durably applied: counts, Kafka positions and progress kept in Hudi commit metadata."""
