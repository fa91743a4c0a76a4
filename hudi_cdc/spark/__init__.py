"""Spark plumbing: the session, Hadoop file systems (opened in one place), cached expressions and cut lineages."""
