"""Rule compilation: every mistake is a ConfigError naming the rule and key, found at start-up."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from alerts.rules import compile_rules, parse_duration
from lagwatch.config import ConfigError, parse_config
from lagwatch.vocabulary import STATUS_ORDER

ROOT = Path(__file__).resolve().parents[2]


def _alerts(rules: list[dict], **extra: object):
    return parse_config({"alerts": {"use_default_rules": False, "rules": rules, **extra}}, environ={}).alerts


@pytest.mark.parametrize(
    ("rule", "fragment"),
    [
        ({"name": "R1", "metric": "no_such_metric"}, "alerts.rules 'R1': metric: unknown metric 'no_such_metric'"),
        ({"name": "R3", "metric": "lag", "summary": "lag {nope}"}, "alerts.rules 'R3': summary: template field {nope}"),
        ({"name": "R4", "metric": "lag", "summary": "{value:zz}"}, "alerts.rules 'R4': summary: bad template"),
        ({"name": "R5", "metric": "lag", "by": ["broker"]}, "alerts.rules 'R5': by: 'broker' is not a label of lag_1m"),
        ({"name": "R6", "metric": "status", "kind": "status", "level": "BAD"}, "level: unknown status 'BAD'"),
        ({"name": "R7", "metric": "lag", "receivers": ["pager"]}, "alerts.rules 'R7': receivers: unknown receiver"),
        ({"name": "R8", "metric": "up", "field": "median"}, "alerts.rules 'R8': field: unknown field 'median'"),
    ],
)
def test_bad_rules_name_rule_and_key(rule: dict, fragment: str) -> None:
    with pytest.raises(ConfigError) as err:
        compile_rules(_alerts([rule]))
    assert fragment in str(err.value)


def test_durations_parse_strictly() -> None:
    assert parse_duration("90s", "x") == 90
    assert parse_duration("1h30m", "x") == 5400
    assert parse_duration("250ms", "x") == 0.25
    for bad in ("", "5", "1x", "m5", "1h 30m", "-1s"):
        with pytest.raises(ConfigError):
            parse_duration(bad, "x")


def test_default_rules_compile_and_cover_the_issue() -> None:
    alerts = parse_config({}, environ={}).alerts
    rules = {r.name: r for r in compile_rules(alerts)}
    assert {
        "UnderReplicatedPartitions",
        "OfflinePartitions",
        "ActiveControllerCount",
        "BrokerDown",
        "LeaderElectionSpike",
        "ConsumerGroupUnhealthy",
        "ConsumerTimeLagHigh",
        "DeadLettersGrowing",
        "PipelineStale",
    } <= set(rules)
    assert rules["UnderReplicatedPartitions"].for_s == 60
    assert rules["BrokerDown"].labels["category"] == "broker_down"
    assert rules["ConsumerGroupUnhealthy"].labels["category"] == "lag"
    assert STATUS_ORDER.index(rules["ConsumerGroupUnhealthy"].level) < STATUS_ORDER.index("STOP")
    assert rules["PipelineStale"].threshold == 60
    margin = rules["RetentionMarginLow"]
    assert (margin.source.table, margin.op, margin.threshold) == ("lag_1m", "<", 3600)


@pytest.mark.parametrize(
    "name",
    [
        "request_handler_idle_ratio",
        "network_processor_idle_ratio",
        "bytes_rejected_total",
        "failed_produce_requests_total",
        "failed_fetch_requests_total",
    ],
)
def test_a_rule_on_a_name_no_collector_emits_is_refused(name: str) -> None:
    with pytest.raises(ConfigError) as err:
        compile_rules(_alerts([{"name": "NeverFires", "metric": name}]))
    assert f"alerts.rules 'NeverFires': metric: unknown metric {name!r} (no collector emits it" in str(err.value)


@pytest.mark.parametrize(
    ("name", "field"),
    [
        ("request_handler_avg_idle_percent", "avg"),
        ("consumer_group_state", "last"),
        ("broker_count", "last"),
        ("consumer_group_members", "min"),
        ("isr_shrinks_total", "rate_per_s"),
    ],
)
def test_a_rule_on_an_emitted_name_compiles_against_metrics_1m(name: str, field: str) -> None:
    [compiled] = compile_rules(_alerts([{"name": "Emitted", "metric": name, "field": field}]))
    assert (compiled.source.table, compiled.metric, compiled.value_column) == ("metrics_1m", name, field)


def test_a_rate_rule_on_a_gauge_is_refused() -> None:
    """rate_per_s is NULL for gauges in the lake, so such a rule could never fire."""
    with pytest.raises(ConfigError) as err:
        compile_rules(_alerts([{"name": "GaugeRate", "metric": "consumer_lag", "field": "rate_per_s"}]))
    expected = "alerts.rules 'GaugeRate': field: rate_per_s is only computed for counters; 'consumer_lag' is a gauge"
    assert expected in str(err.value)


def test_custom_metric_needs_declaring() -> None:
    rule = {"name": "Custom", "metric": "my_exporter_metric"}
    with pytest.raises(ConfigError):
        compile_rules(_alerts([rule]))
    [compiled] = compile_rules(_alerts([rule], extra_metrics=["my_exporter_metric"]))
    assert compiled.source.table == "metrics_1m"


@pytest.mark.parametrize(
    ("rule_toml", "fragment"),
    [
        ('metric = "bogus_metric"', "unknown metric 'bogus_metric'"),
        ('metric = "lag"\nfor = "2 min"', "bad duration '2 min'"),
        ('metric = "lag"\nsummary = "{missing_label}"', "template field {missing_label}"),
    ],
)
def test_cli_exits_2_without_traceback(tmp_path: Path, rule_toml: str, fragment: str) -> None:
    config = tmp_path / "bad.toml"
    config.write_text(
        f'[lake]\npath = "{tmp_path / "lake"}"\nduckdb_path = "{tmp_path / "l.duckdb"}"\n'
        f'[alerts]\nstate_dir = "{tmp_path / "state"}"\nuse_default_rules = false\n'
        f'[[alerts.rules]]\nname = "Broken"\n{rule_toml}\n'
    )
    done = subprocess.run(
        [sys.executable, "-m", "shell.cli", "--config", str(config), "alerts", "--once"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert "alerts.rules 'Broken'" in done.stderr and fragment in done.stderr
    assert "Traceback" not in done.stderr
