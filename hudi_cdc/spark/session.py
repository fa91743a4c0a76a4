"""Build a SparkSession with the Hudi bundle and Spark's Kafka source on the classpath."""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pyspark import SparkConf
from pyspark.sql import SparkSession

from hudi_cdc.errors import MissingJarsError, SessionSettingsError

if TYPE_CHECKING:
    from hudi_cdc.config.models import JobConfig

log = logging.getLogger(__name__)

REQUIRED_STATIC_CONF = {
    # Hudi's writer refuses any other serializer ("hoodie only support KryoSerializer"), and its
    # Kryo classes need its registrar
    "spark.serializer": "org.apache.spark.serializer.KryoSerializer",
    "spark.kryo.registrator": "org.apache.spark.HoodieSparkKryoRegistrar",
}
"""Settings the job needs that Spark reads only when the session's context starts: a session
hudi_cdc did not create is checked for them (`SessionSettingsError`), never changed."""

SQL_EXTENSIONS = "spark.sql.extensions"
HUDI_SQL_EXTENSION = "org.apache.spark.sql.hudi.HoodieSparkSessionExtension"
HUDI_SQL_STATIC_CONF = {
    SQL_EXTENSIONS: HUDI_SQL_EXTENSION,
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.hudi.catalog.HoodieCatalog",
}
"""Hudi's SQL: its statements and procedures (`hudi-cdc compact` calls `run_compaction`) and its
catalog. Static, so set only where hudi_cdc creates a session that asks for it (`hudi_sql`).

Why not in every session: the extension adds eleven analyzer and optimizer rules that run over
every query's plan, and ingestion's plans (decode, fold, counts, Hudi's own writes and reads
through the DataFrame API) are large. Over warm batches of six small tables two of them took 0.86 s
a batch of Catalyst's 2.52 s, and none of them ever changed a plan of ingestion, table creation
included (docs/performance-journal.md, round 29)."""

JOB_SQL_CONF = {
    # Debezium timestamps are UTC instants; reading them in another zone would shift wall clocks.
    "spark.sql.session.timeZone": "UTC",
    # Debezium's epoch days and microseconds are proleptic Gregorian, as Spark 3+, Trino and
    # hudi-rs read them. By default Spark refuses to write a date before 1582-10-15 or a
    # timestamp before 1900 to Parquet or Avro (Hudi's base and log files), or to read one from
    # a file that does not name its calendar: such a record failed its batch. Stored as sent.
    "spark.sql.parquet.datetimeRebaseModeInWrite": "CORRECTED",
    "spark.sql.parquet.datetimeRebaseModeInRead": "CORRECTED",
    "spark.sql.parquet.int96RebaseModeInWrite": "CORRECTED",
    "spark.sql.parquet.int96RebaseModeInRead": "CORRECTED",
    "spark.sql.avro.datetimeRebaseModeInWrite": "CORRECTED",
    "spark.sql.avro.datetimeRebaseModeInRead": "CORRECTED",
}
"""SQL settings the job's queries need for correct values. Runtime settings: `for_job` sets them in
the job's own copy of a session, never in the caller's."""


def hudi_session_conf(*, hudi_sql: bool) -> dict[str, str]:
    """The Hudi settings a session hudi_cdc creates starts with (`hudi_sql`: also Hudi's SQL)."""
    return {**REQUIRED_STATIC_CONF, **JOB_SQL_CONF, **(HUDI_SQL_STATIC_CONF if hudi_sql else {})}


REQUIRED_HADOOP_CONF = {
    # Hudi writes through parquet-avro when it merges (an upsert into a stored file, compaction),
    # whose default two-level lists cannot hold a NULL element: an update of a row with one in
    # an array (PostgreSQL `{1,NULL}`) failed its batch. Three-level lists, as Spark's own
    # writer (a first snapshot) writes them, hold it; Hudi reads both.
    "parquet.avro.write-old-list-structure": "false",
}
"""Hadoop settings the job needs. Hudi reads the context's Hadoop configuration, shared by every
session, so a session hudi_cdc did not create is checked for them, never changed."""

CODEGEN_CACHE_ENTRIES = "spark.sql.codegen.cache.maxEntries"
CODEGEN_CACHE_DEFAULT = "2000"
"""Spark's cache of generated classes holds 100 by default. One table's batch (decode, fold,
counts, write) uses about 115, so with the default every batch compiled about 65 classes again
and the JIT compiled them to machine code again (docs/performance-journal.md, round 5). 2000 leaves room
for a job of 15 tables. A static setting: it takes effect only when the session is created,
and a value from spark-submit (`--conf`) or `extra_conf` wins."""

DRIVER_JAVA_OPTIONS = "spark.driver.extraJavaOptions"
LOCAL_DRIVER_JAVA_OPTIONS = "-XX:+UseParallelGC"
"""The JVM a local session starts collects garbage with the throughput collector, not G1.

A micro-batch job wants CPU for its batches, not short pauses: warm batches into 5 tables cost
0.85x the JVM CPU of G1 (less collection, and less C2 compiling), and the freshness bench's p95
fell from 35 s to 31-34 s (docs/performance-journal.md, round 11). Only where the session starts the JVM
itself (local runs: `hudi-cdc run`, the demo, the tests); under spark-submit the submit command
decides. A local `extra_conf` value that picks no collector of its own keeps this one
(`local_java_options`)."""

_PICKS_A_COLLECTOR = re.compile(r"-XX:\+Use(?:Serial|Parallel|ParallelOld|G1|Z|Shenandoah|Epsilon|ConcMarkSweep)GC\b")
"""HotSpot's collector flags by name: other `-XX:+Use...GC` flags (UseAdaptiveSizePolicyWithSystemGC)
tune a collector and pick none."""


def local_java_options(requested: str | None) -> str:
    """The driver JVM options of a local session: `requested` plus ParallelGC unless it picks a collector.

    Why: a bench or a user adding one JVM flag (`-XX:TieredStopAtLevel=1`) should not silently
    fall back to G1 and measure the collector instead of the flag.
    """
    if not requested:
        return LOCAL_DRIVER_JAVA_OPTIONS
    if _PICKS_A_COLLECTOR.search(requested):
        return requested
    return f"{LOCAL_DRIVER_JAVA_OPTIONS} {requested}"


_SIZE_ESTIMATOR_PROPERTIES = {"jol.skipDynamicAttach": "true", "jol.skipHotspotSAAttach": "true"}
"""Java system properties for the object-layout library (JOL) inside Hudi's bundle, which sizes
records the first time a write estimates them. Unset, it tries to attach an agent to its own JVM
and then the HotSpot Serviceability Agent, which forks helper JVMs: both fail on Java 17 as
Spark runs it, after about 1 CPU s and 1 s of wall time (measured on this machine), and it falls
back to the Unsafe-based estimate these properties pick at once. JOL still prints one line that
it skipped them. Set on the driver's JVM; executors on a cluster take them as
`-D` flags in `spark.executor.extraJavaOptions`."""


BUILD_ENV = "HUDI_CDC_BUILD"
"""Names the folder `make` fills (jars/, run/); the Makefile and devkit/ set it, a cluster does not."""


def build_dir() -> Path | None:
    """The folder named by $HUDI_CDC_BUILD, or None (an installed package knows no checkout)."""
    value = os.environ.get(BUILD_ENV)
    return Path(value) if value else None


def local_jars() -> list[str]:
    """Jars fetched by `make jars` into $HUDI_CDC_BUILD/jars; none without it (spark-submit passes --jars)."""
    build = build_dir()
    return sorted(str(p) for p in (build / "jars").glob("*.jar")) if build is not None else []


DRIVER_CLASSPATH = "spark.driver.extraClassPath"


def local_s3_classpath() -> str | None:
    """Hadoop's S3A jars fetched by `make s3-jars` ($HUDI_CDC_BUILD/jars-s3), as a class-path entry.

    On the driver's class path, not in `spark.jars`: a local session's executor runs in the
    driver's JVM, and `spark.jars` would copy the 280 MB AWS SDK bundle into every session's
    work folder. None without them (spark-submit and the cluster bring S3A).
    """
    build = build_dir()
    folder = build / "jars-s3" if build is not None else None
    return f"{folder}/*" if folder is not None and any(folder.glob("*.jar")) else None


REQUIRED_JARS = {
    "org.apache.hudi:hudi-spark3.5-bundle_2.12:1.2.0": "org.apache.hudi.DefaultSource",
    "org.apache.spark:spark-sql-kafka-0-10_2.12:3.5.7": "org.apache.spark.sql.kafka010.KafkaSourceProvider",
}
"""Maven coordinates of the jars every command needs (as infra/spark/pom.xml pins them), with a
class each provides. Checked when a session starts: without them Spark fails much later, with
a py4j error that names no jar (`'JavaPackage' object is not callable`)."""


def missing_jars(gateway: Any) -> list[str]:
    """The coordinates of REQUIRED_JARS whose class the session's JVM (`gateway`) cannot load."""
    loadable = gateway.org.apache.spark.util.Utils.classIsLoadable
    return [coordinates for coordinates, name in REQUIRED_JARS.items() if not loadable(name)]


def get_or_create_session(
    *,
    app_name: str = "hudi-cdc",
    master: str | None = None,
    extra_conf: dict[str, str] | None = None,
    hudi_sql: bool = False,
) -> SparkSession:
    """Return the running SparkSession untouched, or create one wired for Hudi.

    A session that exists (a notebook's, a platform's) keeps every setting: Spark's builder would
    apply the settings below to it, so it is not called; `for_job` checks what the job needs of
    it. A new session gets Hudi's settings and, unless under spark-submit (which decides master,
    jars and resources), local defaults: the jars in $HUDI_CDC_BUILD/jars (if set), local[2],
    2 shuffle partitions, no UI. `hudi_sql`: also Hudi's SQL extension and catalog
    (`HUDI_SQL_STATIC_CONF`), which compaction needs and ingestion only pays for.
    """
    existing = running_session()
    if existing is not None:
        if extra_conf:
            log.warning(
                "a Spark session runs already: %s not applied (hudi_cdc does not change a session it did not "
                "create; give them to the session's builder)", ", ".join(sorted(extra_conf))
            )
        missing = missing_jars(jvm(existing))
        if missing:
            raise MissingJarsError(missing)
        return existing
    builder = SparkSession.builder.appName(app_name)
    for key, value in hudi_session_conf(hudi_sql=hudi_sql).items():
        builder = builder.config(key, value)
    # spark-submit's PythonRunner starts this Python on the gateway of the JVM it configured: in
    # client mode, and in YARN's application master in cluster mode, where spark-submit's shell
    # variables below are not set (a local[2] session there ran the job inside the container and
    # YARN failed the application: "User did not initialize spark context!")
    under_submit = (
        bool(os.environ.get("PYSPARK_GATEWAY_PORT"))
        or "spark.master" in os.environ.get("SPARK_CONF_SUBMITTED", "")
        or bool(os.environ.get("SPARK_ENV_LOADED"))
    )
    if not under_submit:
        builder = builder.master(master or "local[2]")
        jars = local_jars()
        if jars:
            builder = builder.config("spark.jars", ",".join(jars))
        s3 = local_s3_classpath()
        if s3 is not None:
            builder = builder.config(DRIVER_CLASSPATH, s3)
        builder = (
            builder.config("spark.sql.shuffle.partitions", "2")
            .config("spark.default.parallelism", "2")
            .config("spark.ui.enabled", "false")
            .config("spark.driver.memory", "2g")
            # Stage progress bars are drawn on the terminal the log goes to: they split log lines
            # (a warning printed mid-bar) and fill a redirected log with carriage returns.
            .config("spark.ui.showConsoleProgress", "false")
        )
        build = build_dir()
        if build is not None:
            builder = builder.config("spark.sql.warehouse.dir", str(build / "run" / "spark-warehouse"))
    extra = dict(extra_conf or {})
    if not under_submit:
        extra[DRIVER_JAVA_OPTIONS] = local_java_options(extra.get(DRIVER_JAVA_OPTIONS))
    if CODEGEN_CACHE_ENTRIES not in extra and not SparkConf().contains(CODEGEN_CACHE_ENTRIES):
        builder = builder.config(CODEGEN_CACHE_ENTRIES, CODEGEN_CACHE_DEFAULT)
    for key, value in extra.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    missing = missing_jars(jvm(session))
    if missing:
        raise MissingJarsError(missing)
    for key, value in REQUIRED_HADOOP_CONF.items():
        # set on the live configuration: under spark-submit the context exists before this
        hadoop_conf(session).set(key, value)
    system = jvm(session).java.lang.System
    for key, value in _SIZE_ESTIMATOR_PROPERTIES.items():
        if system.getProperty(key) is None:  # a -D flag of the user's own wins
            system.setProperty(key, value)
    return session


def running_session() -> SparkSession | None:
    """The session Spark's builder would return now (this thread's active one, else the first one
    created), or None when no session runs."""
    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    first = SparkSession._instantiatedSession
    return first if first is not None and first._sc._jsc is not None else None


def session_problems(spark: SparkSession) -> list[str]:
    """What the job needs of `spark` that only the session's creator can set: each as `key=value` to set."""
    conf = spark.sparkContext.getConf()
    problems = [
        f"{key} is {conf.get(key)!r}: build the session with {key}={value}"
        for key, value in REQUIRED_STATIC_CONF.items()
        if (conf.get(key) or "") != value
        and not (key == "spark.kryo.registrator" and value in (conf.get(key) or "").split(","))
    ]
    hadoop = hadoop_conf(spark)
    problems += [
        f"the Hadoop setting {key} is {hadoop.get(key)!r}: build the session with spark.hadoop.{key}={value}"
        for key, value in REQUIRED_HADOOP_CONF.items()
        if hadoop.get(key) != value
    ]
    return problems


def for_job(spark: SparkSession) -> SparkSession:
    """The session the job's queries run in: `spark` itself when it has every `JOB_SQL_CONF` value
    (sessions hudi_cdc creates do), else a copy of `spark` with them set; `spark` is unchanged.

    The copy (Spark's `cloneSession`) shares the context, jars and caches and starts with all of
    `spark`'s SQL settings (shuffle partitions, adaptive execution...), so a user's tuning applies
    to the job, while the time zone and rebase modes the job's values depend on are set in the
    copy only. A streaming query started in the copy is listed in the copy's `streams`, not in
    `spark.streams`, and the streaming listeners added to `spark` do not hear it: so no copy is
    made when none is needed.

    Raises:
        SessionSettingsError: `spark` lacks a static setting the job needs (`session_problems`).
    """
    problems = session_problems(spark)
    if problems:
        raise SessionSettingsError(problems)
    if all(spark.conf.get(key, None) == value for key, value in JOB_SQL_CONF.items()):
        return spark
    copy = SparkSession(spark.sparkContext, spark._jsparkSession.cloneSession())
    for key, value in JOB_SQL_CONF.items():
        copy.conf.set(key, value)
    return copy


@contextmanager
def activated(spark: SparkSession) -> Iterator[SparkSession]:
    """`spark` as this thread's active session in the JVM for the block, then the one before again.

    Why: Hudi and Spark read settings of the thread's active session (`SQLConf.get`) outside a
    query's execution, e.g. while planning a write; the job's steps on the driver must see the
    job's session. Streaming batches run in a thread where Spark makes the query's session active.
    """
    sessions = jvm(spark).org.apache.spark.sql.SparkSession
    before = sessions.getActiveSession()
    sessions.setActiveSession(spark._jsparkSession)
    try:
        yield spark
    finally:
        if before.isDefined():
            sessions.setActiveSession(before.get())
        else:
            sessions.clearActiveSession()


def has_hudi_sql(spark: SparkSession) -> bool:
    """Was `spark`'s context started with Hudi's SQL extension (`HUDI_SQL_STATIC_CONF`)?"""
    extensions = spark.sparkContext.getConf().get(SQL_EXTENSIONS) or ""
    return HUDI_SQL_EXTENSION in [name.strip() for name in extensions.split(",")]


def job_session(job: JobConfig, purpose: str, *, hudi_sql: bool = False) -> SparkSession:
    """The session of one of the job's commands (`purpose`: `compact`, `status`...), with the
    job's Hadoop settings (`job.hadoop_conf`) in force; `hudi_sql` as `get_or_create_session`'s."""
    spark = get_or_create_session(app_name=f"{job.name}-{purpose}", hudi_sql=hudi_sql)
    apply_hadoop_conf(spark, job.hadoop_conf)
    return spark


def apply_hadoop_conf(spark: SparkSession, settings: Mapping[str, str]) -> None:
    """Set `settings` on the session's live Hadoop configuration (`job.hadoop_conf`).

    Live, not as `spark.hadoop.*` builder settings: under spark-submit the context exists before
    the job reads its file. Readers and writers (Hudi, the checkpoint, the dead-letter store,
    `hudi.fs`) take this configuration when they open a file system, but Hadoop caches an open
    one per scheme, bucket and user: call this before the job's first access to its storage, as
    `job_session` and `stream.run` do.
    """
    conf = hadoop_conf(spark)
    for key, value in settings.items():
        conf.set(key, value)


def jvm(spark: SparkSession) -> Any:
    """The JVM gateway (Hadoop FileSystem, Hudi timeline APIs are only reachable through it)."""
    gateway = spark._jvm
    if gateway is None:
        raise RuntimeError("this SparkSession has no JVM gateway (Spark Connect is not supported)")
    return gateway


def hadoop_conf(spark: SparkSession) -> Any:
    """The session's Hadoop configuration (JVM object)."""
    return spark._jsc.hadoopConfiguration()


def java_chain(exc: BaseException) -> list[Any]:
    """The Java throwables behind a Py4JJavaError or a PySpark captured exception (such as a
    StreamingQueryException), outermost first (empty for other errors)."""
    chain: list[Any] = []
    # py4j's error keeps the throwable as `java_exception`; PySpark's captured ones as `_origin`
    current = getattr(exc, "java_exception", None) or getattr(exc, "_origin", None)
    try:
        while current is not None and len(chain) < 20:
            chain.append(current)
            nxt = current.getCause()
            current = None if nxt is None or nxt.equals(current) else nxt
    except Exception:  # the JVM is gone: what was walked so far
        pass
    return chain


def java_cause(exc: BaseException) -> str | None:
    """`Top: message <- Root: message` of a Py4JJavaError (None for other errors).

    py4j's own text starts with "An error occurred while calling o3059.syncHoodieTable", which
    says nothing about the metastore; the Java exception chain does.
    """
    try:
        chain = [f"{t.getClass().getName()}: {t.getMessage()}" for t in java_chain(exc)]
    except Exception:  # the JVM is gone: fall back to py4j's text
        return None
    if not chain:
        return None
    return chain[0] if len(chain) == 1 else f"{chain[0]} <- root cause {chain[-1]}"


def error_summary(exc: BaseException) -> str:
    """One line saying why, for a log line or a stored message: the Java cause chain when there is one."""
    text = str(exc).strip().splitlines()
    return (java_cause(exc) or f"{type(exc).__name__}: {text[0] if text else ''}")[:500]
