"""Everything that speaks Hudi: option names, writer, hive sync, compaction."""
