# %% [markdown]
# # hudi_cdc from a notebook
#
# A job defined in the notebook (a dict, no YAML file), started in the notebook's own Spark
# session, watched batch by batch, then stopped. The session keeps its own settings: the job's
# queries run in a copy of it with the time zone and rebase modes they need (docs/api.md).
#
# Cells are marked `# %%` (Jupyter, VS Code); `python examples/notebook.py` runs them in order.
# `${VAR:-default}` references are filled from the environment when the configuration loads:
# KAFKA_BOOTSTRAP, TOPIC, LAKE and WATCH_SECONDS here.

# %%
import os
import time

from hudi_cdc import get_or_create_session, load_config, start, status

# The notebook's session, or a new one wired for Hudi (locally: HUDI_CDC_BUILD names the
# folder `make jars` filled). A session that already runs is returned untouched.
spark = get_or_create_session(app_name="hudi-cdc-notebook")

# %%
config = load_config(
    {
        "kafka": {"bootstrap_servers": "${KAFKA_BOOTSTRAP:-localhost:9092}", "starting_offsets": "earliest"},
        "job": {
            "name": "notebook",
            "checkpoint_dir": "${LAKE:-/tmp/hudi-cdc-notebook}/checkpoint",
            "dead_letter_path": "${LAKE:-/tmp/hudi-cdc-notebook}/dead_letters",
            "trigger_interval": "2 seconds",
        },
        "routes": [{"topic": "${TOPIC:-shop.inventory.customers}", "table": "customers"}],
        "tables": [{"name": "customers", "key": ["id"], "base_path": "${LAKE:-/tmp/hudi-cdc-notebook}/customers"}],
    }
)

# %%
# Each batch's metrics arrive here (in Spark's streaming thread); the query keeps them too.
query = start(spark, config, on_batch=lambda batch: print(f"batch {batch.batch_id}: {batch.read} records"))

# %%
# Watch: Spark's progress of each trigger, and hudi_cdc's counts per table.
watch_seconds = float(os.environ.get("WATCH_SECONDS", "60"))
deadline = time.monotonic() + watch_seconds
while time.monotonic() < deadline and query.isActive:
    progress = query.lastProgress
    if progress is not None:
        print(f"trigger {progress['batchId']}: {progress['numInputRows']} rows, {progress['timestamp']}")
    if query.last_batch is not None:
        for table in query.last_batch.tables:
            print(f"  {table.table}: read {table.read}, applied {table.applied}, commit {table.commit_time}")
    if query.summary.read > 0:
        break  # something arrived: enough for a demonstration
    time.sleep(2)

# %%
query.stop()
print(f"stopped after {len(query.summary.batches)} batch(es), {query.summary.read} records")
for table in status(spark, config):
    print(table.table, table.last_commit, table.watermark, table.committed_counts)

# %%
spark.read.format("hudi").load(config.table("customers").base_path).select("id", "name", "balance").show()
