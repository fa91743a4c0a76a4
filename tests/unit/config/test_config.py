"""A bad configuration fails at start, naming the file, the field and what is allowed."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from hudi_cdc.config.models import ARCHIVE_AFTER_HOURS, load_config, parse_config
from hudi_cdc.errors import ConfigError
from hudi_cdc.hudi.table_options import write_options


def _valid() -> dict[str, Any]:
    return {
        "kafka": {"bootstrap_servers": "127.0.0.1:9092", "properties": {"sasl.jaas.config": "secret!", "acks": "all"}},
        "job": {"checkpoint_dir": "/tmp/cp", "dead_letter_path": "/tmp/dl"},
        "routes": [{"topic": "srv.db.customers", "table": "customers"}, {"pattern": r"srv\.db\.orders_\d+", "table": "orders"}],
        "tables": [
            {"name": "customers", "key": ["id"], "base_path": "/tmp/c"},
            {"name": "orders", "key": ["id"], "base_path": "/tmp/o", "type": "MERGE_ON_READ"},
        ],
    }


def test_valid_config_keeps_exact_topics_and_patterns() -> None:
    # which table a topic feeds is tested in tests/unit/kafka/test_routing.py (the routing the job runs)
    config = parse_config(_valid())
    assert [(r.topic, r.pattern, r.table) for r in config.routes] == [
        ("srv.db.customers", None, "customers"),
        (None, r"srv\.db\.orders_\d+", "orders"),
    ]


def test_secrets_are_redacted_and_not_in_repr() -> None:
    kafka = parse_config(_valid()).kafka
    assert kafka.redacted_properties() == {"sasl.jaas.config": "***", "acks": "all"}
    assert "secret!" not in repr(kafka)


@pytest.mark.parametrize(
    ("change", "field", "allowed"),
    [
        pytest.param(lambda c: c["tables"][0].update(type="MOR"), "tables.0.type", "COPY_ON_WRITE", id="bad-table-type"),
        pytest.param(lambda c: c["tables"][0].update(key=[]), "tables.0.key", "at least 1", id="empty-key"),
        pytest.param(lambda c: c["routes"].append({"topic": "x", "table": "nope"}), "<root>", "unknown tables", id="route-to-unknown"),
        pytest.param(lambda c: c["tables"][0].update(deletes="sometimes"), "tables.0.deletes", "'hard' or 'soft'", id="bad-deletes"),
        pytest.param(lambda c: c["kafka"].pop("bootstrap_servers"), "kafka.bootstrap_servers", "Field required", id="missing-bootstrap"),
        pytest.param(lambda c: c["routes"].append({"pattern": "(", "table": "orders"}), "routes.2", "not a valid regex", id="bad-regex"),
        pytest.param(lambda c: c["routes"].append({"pattern": r"(?P<n>x)", "table": "orders"}), "routes.2", "(?<name>...)", id="python-only-regex"),
        pytest.param(lambda c: c["job"].update(trigger_interval="banana"), "job.trigger_interval", "`30 seconds`", id="banana-interval"),
        pytest.param(lambda c: c["job"].update(trigger_interval=30), "job.trigger_interval", "not a duration", id="interval-without-unit"),
        pytest.param(lambda c: c["kafka"].update(connect_timeout="5"), "kafka.connect_timeout", "not a duration", id="bad-timeout"),
        pytest.param(lambda c: c["job"].update(dead_letter_retention="a month"), "job.dead_letter_retention", "not a duration", id="bad-retention"),
        pytest.param(lambda c: c["tables"][0].update(hoodie_options={"hoodie.index.type": "BLOOM"}), "tables.0.hoodie_options", "set by hudi_cdc for correctness", id="owned-hoodie-option"),
        pytest.param(lambda c: c["tables"][0].update(hoodie_options={"hoodie.write.record.merge.custom.implementation.classes": "org.apache.hudi.OverwriteWithLatestSparkRecordMerger"}), "tables.0.hoodie_options", "set by hudi_cdc for correctness", id="record-merger-classes"),
        pytest.param(lambda c: c["tables"][0].update(hoodie_options={"hoodie.datasource.write.record.merger.impls": "org.apache.hudi.OverwriteWithLatestSparkRecordMerger"}), "tables.0.hoodie_options", "set by hudi_cdc for correctness", id="record-merger-classes-old-name"),
        pytest.param(lambda c: c["tables"][0].update(hoodie_options={"parquet.block.size": 1}), "tables.0.hoodie_options", "not Hudi options", id="foreign-hoodie-option"),
        pytest.param(lambda c: c["tables"][1].update(base_path="/tmp/c/"), "tables.1.base_path", "same base_path as table customers", id="duplicate-base-path"),
        pytest.param(lambda c: c["tables"][1].update(base_path="file:///tmp/c"), "tables.1.base_path", "same base_path", id="duplicate-as-uri"),
        pytest.param(lambda c: c["tables"][1].update(base_path="/tmp/c/o"), "tables.1.base_path", "orders lies inside table customers", id="nested-base-path"),
        pytest.param(lambda c: c["job"].update(checkpoint_dir="/tmp/c/_cp"), "job.checkpoint_dir", "inside the base_path of table customers", id="checkpoint-in-table"),
        pytest.param(lambda c: c["job"].update(dead_letter_path="/tmp/o/dl"), "job.dead_letter_path", "inside the base_path of table orders", id="dead-letters-in-table"),
        pytest.param(lambda c: c["tables"][0].update(mode="patch"), "tables.0", "need `columns`", id="patch-without-columns"),
        pytest.param(lambda c: c["tables"][0].update(index="record_level", hoodie_options={"hoodie.metadata.enable": False}), "tables.0", "metadata table", id="record-index-without-metadata-table"),
        pytest.param(lambda c: c["tables"][0].update(index="bloom"), "tables.0.index", "'simple', 'record_level' or 'bucket'", id="unknown-index"),
        pytest.param(lambda c: c["tables"][0].update(unavailable_value_placeholder="hex:5f5"), "tables.0.unavailable_value_placeholder", "hex octets", id="odd-hex-placeholder"),
        pytest.param(lambda c: c["tables"][0].update(unavailable_value_placeholder=""), "tables.0.unavailable_value_placeholder", "is empty", id="empty-placeholder"),
        pytest.param(lambda c: c["tables"][0].update(archive_after_hours=0), "tables.0.archive_after_hours", "greater than or equal to 1", id="no-archive-window"),
    ],
)
def test_bad_config_names_field_and_allowed_values(change: Any, field: str, allowed: str) -> None:
    data = _valid()
    change(data)
    with pytest.raises(ConfigError) as err:
        parse_config(data, source="job.yaml")
    message = str(err.value)
    assert "job.yaml" in message and field in message and allowed in message


def test_an_archive_window_is_100_hours_unless_a_table_sets_one_or_none() -> None:
    data = _valid()
    data["tables"][0]["archive_after_hours"] = None
    data["tables"][1]["archive_after_hours"] = 73
    first, second = parse_config(data).tables
    assert (first.archive_after_hours, second.archive_after_hours) == (None, 73)
    assert parse_config(_valid()).tables[0].archive_after_hours == ARCHIVE_AFTER_HOURS == 100


def test_hadoop_settings_are_hadoop_text_and_kept_out_of_repr() -> None:
    data = _valid()
    data["job"]["hadoop_conf"] = {
        "fs.s3a.path.style.access": True,
        "fs.s3a.connection.maximum": 64,
        "fs.s3a.secret.key": "s3cr3t",
    }
    job = parse_config(data).job
    # Hadoop parses `true`, not Python's `True`
    assert job.hadoop_conf == {"fs.s3a.path.style.access": "true", "fs.s3a.connection.maximum": "64", "fs.s3a.secret.key": "s3cr3t"}
    assert "s3cr3t" not in repr(job)
    data["job"]["hadoop_conf"] = {"fs.s3a.endpoint": {"host": "x"}}
    with pytest.raises(ConfigError, match=r"job\.hadoop_conf"):
        parse_config(data, source="job.yaml")


@pytest.mark.parametrize(
    ("key", "says"),
    [
        ("spark.hadoop.fs.s3a.endpoint", "write the Hadoop key itself, 'fs.s3a.endpoint'"),
        ("spark.sql.shuffle.partitions", "a Spark setting, not Hadoop's"),
    ],
)
def test_a_spark_key_among_the_hadoop_settings_is_refused_not_lost(key: str, says: str) -> None:
    data = _valid()
    data["job"]["hadoop_conf"] = {"fs.s3a.path.style.access": True, key: "x"}
    with pytest.raises(ConfigError, match=r"job\.hadoop_conf") as refused:
        parse_config(data, source="job.yaml")
    assert says in str(refused.value)


def test_environment_references_are_expanded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BROKERS", "kafka-1:9093")
    path = tmp_path / "job.yaml"
    path.write_text(
        "kafka: {bootstrap_servers: '${BROKERS}'}\njob: {checkpoint_dir: /c, dead_letter_path: /d}\n"
        "routes: [{topic: t, table: a}]\ntables: [{name: a, key: [id], base_path: /a}]\n"
    )
    assert load_config(path).kafka.bootstrap_servers == "kafka-1:9093"


def test_missing_file_and_bad_yaml_are_config_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="file not found"):
        load_config(tmp_path / "nope.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("kafka: [unclosed")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(bad)


def test_demo_config_is_valid(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HUDI_CDC_BOOTSTRAP", "127.0.0.1:1")
    monkeypatch.setenv("HUDI_CDC_RUN", "/tmp/run")
    monkeypatch.setenv("HUDI_CDC_METASTORE", "thrift://127.0.0.1:1")
    config = load_config(Path(__file__).parents[3] / "schemas" / "demo.yaml")
    assert [t.name for t in config.tables] == ["customers", "orders"]  # routing: kafka/test_routing.py


def test_durations_are_parsed_strictly() -> None:
    data = _valid()
    data["job"].update(trigger_interval="1 day", dead_letter_retention="30 days")
    data["kafka"]["connect_timeout"] = "5 seconds"
    config = parse_config(data)
    assert config.job.trigger_interval == timedelta(days=1)
    assert config.job.dead_letter_retention == timedelta(days=30)
    assert config.kafka.connect_timeout == timedelta(seconds=5)
    assert parse_config(_valid()).job.trigger_interval == timedelta(seconds=30)


def _job_file(tmp_path: Path, *, bootstrap: str = "b:9092", jaas: str = "x", base: str = "/nonexistent/a") -> Path:
    path = tmp_path / "job.yaml"
    path.write_text(
        f"kafka:\n  bootstrap_servers: {bootstrap}\n  properties:\n    sasl.jaas.config: {jaas}\n"
        "job: {checkpoint_dir: /c, dead_letter_path: /d}\n"
        f"routes: [{{topic: t, table: a}}]\ntables:\n  - {{name: a, key: [id], base_path: '{base}'}}\n"
    )
    return path


def test_unset_variable_is_an_error_naming_it(tmp_path: Path) -> None:
    path = _job_file(tmp_path, jaas="${KAFKA_PW}", base="${HUDI_CDC_RUN}/warehouse")
    with pytest.raises(ConfigError) as err:
        load_config(path, environ={})
    message = str(err.value)
    assert str(path) in message
    assert "kafka.properties.sasl.jaas.config: environment variable KAFKA_PW is not set" in message
    assert "tables.0.base_path: environment variable HUDI_CDC_RUN is not set" in message


def test_defaults_and_escapes(tmp_path: Path) -> None:
    path = _job_file(tmp_path, jaas="'${KAFKA_PW:-none} $${LITERAL}'", base="${RUN:-/srv}/a")
    config = load_config(path, environ={})
    assert config.kafka.properties["sasl.jaas.config"] == "none ${LITERAL}"
    assert config.table("a").base_path == "/srv/a"


NASTY = [
    pytest.param('pa"ss\'w: #rd', id="quotes-colon-hash"),
    pytest.param("line1\nline2: {x: [1", id="newline-flow"),
    pytest.param("*alias &anchor !tag %dir @at `tick", id="yaml-indicators"),
    pytest.param("}${OTHER}", id="brace-and-reference"),
]


@pytest.mark.parametrize("secret", NASTY)
def test_a_value_is_taken_literally_and_never_breaks_yaml(tmp_path: Path, secret: str) -> None:
    path = _job_file(tmp_path, jaas="${KAFKA_PW}")
    config = load_config(path, environ={"KAFKA_PW": secret})
    assert config.kafka.properties["sasl.jaas.config"] == secret


@pytest.mark.parametrize("secret", NASTY)
def test_secret_never_appears_in_an_error(tmp_path: Path, secret: str) -> None:
    # the secret lands in fields whose errors quote their value: the table name and a hive identifier
    path = tmp_path / "job.yaml"
    path.write_text(
        "kafka: {bootstrap_servers: '${PW}', max_offsets_per_trigger: '${PW}', properties: {sasl.jaas.config: '${PW}'}}\n"
        "job: {checkpoint_dir: /c, dead_letter_path: /d, trigger_interval: '${PW}'}\n"
        "routes: [{pattern: '${PW}', table: a}]\n"
        "tables: [{name: '${PW}', key: [id], base_path: '/x/${PW}', hive: {database: '${PW}'}}]\n"
    )
    with pytest.raises(ConfigError) as err:
        load_config(path, environ={"PW": secret})
    message = str(err.value)
    assert secret not in message and "${PW}" in message
    for line in secret.splitlines():
        assert line not in message


def test_existing_folder_that_is_not_a_hudi_table_is_refused(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "report.csv").write_text("x")
    (tmp_path / "empty").mkdir()
    (tmp_path / "table" / ".hoodie").mkdir(parents=True)
    (tmp_path / "file").write_text("x")
    for ok in ("empty", "table", "new"):
        load_config(_job_file(tmp_path, base=str(tmp_path / ok)), environ={})
    with pytest.raises(ConfigError, match=r"tables.0.base_path: table a: .*data holds other files \(report.csv\) and no .hoodie/"):
        load_config(_job_file(tmp_path, base=str(tmp_path / "data")), environ={})
    with pytest.raises(ConfigError, match="is a file, not a folder"):
        load_config(_job_file(tmp_path, base=str(tmp_path / "file")), environ={})
    # remote schemes are checked at run start, through Hadoop's FileSystem
    load_config(_job_file(tmp_path, base="s3a://bucket/lake/a"), environ={})


def test_hoodie_options_reach_the_write_options_as_hudi_reads_them() -> None:
    data = _valid()
    data["tables"][1]["hoodie_options"] = {"hoodie.parquet.small.file.limit": 0, "hoodie.metadata.enable": False}
    options = write_options(parse_config(data).table("orders"))
    assert options["hoodie.parquet.small.file.limit"] == "0"
    assert options["hoodie.metadata.enable"] == "false"
    assert options["hoodie.write.record.merge.mode"] == "COMMIT_TIME_ORDERING"  # owned keys stay hudi_cdc's
