"""The job: the streaming query, the per-batch pipeline (the one orchestrator) and failure isolation."""
