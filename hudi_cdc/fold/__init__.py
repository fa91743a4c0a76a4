"""Each key's events folded in event order onto its stored state, merged into the rows to upsert, and counted."""
