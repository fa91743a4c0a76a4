"""lineage: a checkpoint is computed once under a one-node plan, and `release` really frees it.

`release` reaches into Spark's plan (an internal API) and only logs at DEBUG when that fails, so
a Spark upgrade that breaks it would leak every batch's blocks silently: this test is what notices.
"""

from __future__ import annotations

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from hudi_cdc.spark.lineage import checkpointed, release


def _held(spark: SparkSession, rdd_id: int) -> bool:
    """Whether Spark holds the blocks of RDD `rdd_id` (other tests' RDDs may come and go meanwhile)."""
    return bool(spark.sparkContext._jsc.getPersistentRDDs().containsKey(rdd_id))


def test_a_checkpoint_is_one_plan_node_with_the_same_rows_and_release_frees_its_blocks(spark: SparkSession) -> None:
    wide = spark.range(1000).select("id", *[(F.col("id") * i).alias(f"c{i}") for i in range(50)])
    cut = checkpointed(wide)
    plan = cut._jdf.queryExecution().analyzed()
    assert plan.children().size() == 0, "the plan below the checkpoint is cut"
    rdd_id = int(plan.rdd().id())
    assert _held(spark, rdd_id)
    assert cut.agg(F.sum("c49")).collect()[0][0] == wide.agg(F.sum("c49")).collect()[0][0]
    release(cut)
    assert not _held(spark, rdd_id)


def test_a_checkpoint_is_computed_by_its_first_job_only(spark: SparkSession) -> None:
    computed = spark.sparkContext.accumulator(0)

    def counted(x: int) -> int:
        computed.add(1)
        return x

    # a Python function only to count row evaluations; the pipeline itself has none
    source = spark.range(100, numPartitions=2).select(F.udf(counted, "long")("id").alias("id"))
    cut = checkpointed(source)
    assert computed.value == 0, "nothing runs before a job reads the checkpoint"
    assert cut.count() == 100 and cut.agg(F.sum("id")).collect()[0][0] == sum(range(100))
    assert cut.filter(F.col("id") > 49).count() == 50
    assert computed.value == 100, "each row computed once, by the first job"
    release(cut)
