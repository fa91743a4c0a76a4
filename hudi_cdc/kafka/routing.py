"""Kafka topic -> table: the job's routes and templates as one Spark expression over the Kafka rows."""

from __future__ import annotations

import string

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from hudi_cdc.config import route_regex
from hudi_cdc.config.models import IDENTIFIER, Config, TableTemplate

TABLE_COLUMN = "__table"
"""The column `route` adds: the table a record feeds, NULL when no route or template takes its topic."""

UNROUTED = "no route maps this topic to a table; add a `routes` entry or narrow the subscription"


_BAD_NAME = " of this topic, not a valid table name (letters, digits, _); add a route or change the template"


def route(raw: DataFrame, config: Config) -> DataFrame:
    """Tag each Kafka record with its table, NULL when no route or template takes its topic.

    The first matching route wins (an exact `topic` matches the whole name; a `pattern` is a regex
    over the whole name). A topic no route takes goes to the one template that matches it, under
    the name the template derives; a topic two templates match, or whose derived name is not a
    valid table name, has no table (`unrouted_reason` says why).
    """
    table: Column = F.lit(None).cast("string")
    if config.templates:
        table = F.when(
            (_template_matches(config) == 1) & _derived(config).rlike(IDENTIFIER.pattern), _derived(config)
        )
    for r in reversed(config.routes):
        matches = F.col("topic") == r.topic if r.topic is not None else F.col("topic").rlike(f"^(?:{r.pattern})$")
        table = F.when(matches, F.lit(r.table)).otherwise(table)
    return raw.withColumn(TABLE_COLUMN, table)


def unrouted_reason(config: Config) -> Column:
    """Over records `route` left without a table: why, in words that say what to do."""
    if not config.templates:
        return F.lit(UNROUTED)
    derived = _derived(config)
    return (
        F.when(
            _template_matches(config) > 1,
            F.lit("two or more `templates` match this topic; narrow their patterns"),
        )
        .when(
            derived.isNotNull(),
            F.concat(F.lit("the template's `name` makes "), F.to_json(F.array(derived)), F.lit(_BAD_NAME)),
        )
        .otherwise(F.lit(UNROUTED))
    )


def templated_topic(templates: list[TableTemplate]) -> Column:
    """Does each record's topic match one of `templates`?"""
    matched: Column = F.lit(False)
    for template in templates:
        matched = matched | _matches(template)
    return matched


def _matches(template: TableTemplate) -> Column:
    return F.col("topic").rlike(f"^(?:{template.pattern})$")


def _template_matches(config: Config) -> Column:
    """How many templates match each record's topic."""
    count: Column = F.lit(0)
    for template in config.templates:
        count = count + _matches(template).cast("int")
    return count


def _derived(config: Config) -> Column:
    """The name the first matching template derives from each record's topic (NULL: none matches)."""
    name: Column = F.lit(None).cast("string")
    for template in reversed(config.templates):
        name = F.when(_matches(template), _name_of(template)).otherwise(name)
    return name


def _name_of(template: TableTemplate) -> Column:
    """`template.name` over the topic: its literal text and, for each `{group}`, what the group matched."""
    groups = route_regex.compiled(template.pattern).groupindex
    anchored = f"^(?:{template.pattern})$"
    parts: list[Column] = []
    for literal, field, _spec, _conversion in string.Formatter().parse(template.name):
        if literal:
            parts.append(F.lit(literal))
        if field:
            parts.append(F.regexp_extract(F.col("topic"), anchored, groups[field]))
    return F.concat(*parts) if parts else F.lit("")
