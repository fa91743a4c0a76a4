"""The Prometheus alert rules (ops/prometheus/alerts.yml) load, and each fires where it should and nowhere else.

promtool (Debian's `prometheus` package, `make system-packages`) checks the rules and runs their
unit tests (ops/prometheus/alerts_test.yml). Without it the test is skipped on a workbench, and
fails under CI=true, where a skip would hide rules that no longer load.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from hudi_cdc.config.models import parse_config
from hudi_cdc.job.prometheus import JobMetrics

RULES_DIR = Path(__file__).parents[2] / "ops" / "prometheus"
RULES = RULES_DIR / "alerts.yml"
RULE_TESTS = RULES_DIR / "alerts_test.yml"


def _promtool() -> str:
    found = shutil.which("promtool") or ("/usr/bin/promtool" if Path("/usr/bin/promtool").is_file() else None)
    if found is None:
        message = "promtool not found: `make system-packages` installs Debian's prometheus package"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return found


def _alerts() -> dict[str, str]:
    """Alert name -> its expression."""
    groups = yaml.safe_load(RULES.read_text())["groups"]
    return {rule["alert"]: rule["expr"] for group in groups for rule in group["rules"]}


@pytest.mark.parametrize("command", ["check", "test"])
def test_promtool_accepts_the_rules_and_their_unit_tests_pass(command: str) -> None:
    target = RULES if command == "check" else RULE_TESTS
    result = subprocess.run(
        [_promtool(), command, "rules", str(target)], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout + result.stderr


def test_every_alert_has_a_case_that_fires_and_the_tests_have_silent_cases() -> None:
    tests = yaml.safe_load(RULE_TESTS.read_text())["tests"]
    cases = [case for test in tests for case in test["alert_rule_test"]]
    fired = {case["alertname"] for case in cases if case["exp_alerts"]}
    assert fired == set(_alerts())
    assert any(not case["exp_alerts"] for case in cases), "no case where an alert must stay silent"
    # look-alike series that must not fire sit beside the ones that do: more series than firing alerts
    for test in tests:
        firing = {str(alert["exp_labels"]) for case in test["alert_rule_test"] for alert in case["exp_alerts"]}
        assert len(test["input_series"]) > len(firing), f"{test['name']}: no series that must stay silent"


def test_the_rules_use_only_metrics_the_job_publishes() -> None:
    config = parse_config(
        {
            "kafka": {"bootstrap_servers": "b:9092"},
            "job": {"name": "shop", "checkpoint_dir": "/c", "dead_letter_path": "/d"},
            "routes": [{"topic": "t", "table": "customers"}],
            "tables": [{"name": "customers", "key": ["id"], "base_path": "/a"}],
        }
    )
    published = {family.name for family in text_string_to_metric_families(JobMetrics(config).render())}
    used = {
        re.sub(r"_(total|bucket|sum|count)$", "", name)
        for expr in _alerts().values()
        for name in re.findall(r"\bhudi_cdc_\w+", expr)
    }
    assert used and used - published == set()
