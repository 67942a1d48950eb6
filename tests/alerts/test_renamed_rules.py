"""ConsumerGroupStalled became ConsumerGroupUnhealthy: config naming the old name keeps working for
one release, each time with a warning naming the new name, and the alerts carry the old name.

Every place config names a rule: a `[[alerts.rules]]` entry replacing the default, a silence, an
inhibit rule, `lagwatch alerts backtest --rule`. Real engine, lake rows and webhook receiver; the
backtest through the CLI as an operator runs it.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import alerts.notify
import alerts.rules
from alerts.receivers import rfc3339
from alerts.rules import compile_rules
from harness import lake_rows
from harness.processes import ROOT
from lagwatch.backtest_report import from_json
from lagwatch.config import PREVIOUS_ALERTNAME_LABEL, RENAMED_RULES, parse_config
from lagwatch.lake import connect_readonly
from lagwatch.silences import create_silence

OLD, NEW = "ConsumerGroupStalled", "ConsumerGroupUnhealthy"


@pytest.fixture(autouse=True)
def fresh_warnings(monkeypatch: pytest.MonkeyPatch) -> None:
    """Deprecations are logged once per process; each test sees its own."""
    monkeypatch.setattr(alerts.rules, "_warned", set())
    monkeypatch.setattr(alerts.notify, "_warned_silences", set())


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


def _firing(webhook_receiver: Any) -> list[dict[str, str]]:
    return [alert["labels"] for alert in webhook_receiver.alerts()]


def _events(config: Any, event: str) -> list[str]:
    con = connect_readonly(config.lake.path, config.lake.duckdb_path)
    try:
        return [row[0] for row in con.execute("SELECT alertname FROM alert_events WHERE event = ?", [event]).fetchall()]
    finally:
        con.close()


def test_the_rename_is_recorded_where_every_part_reads_it() -> None:
    assert RENAMED_RULES == {OLD: NEW}
    rules = {r.name: r for r in compile_rules(parse_config({}, environ={}).alerts)}
    assert OLD not in rules
    assert rules[NEW].labels[PREVIOUS_ALERTNAME_LABEL] == OLD
    assert all(PREVIOUS_ALERTNAME_LABEL not in r.labels for name, r in rules.items() if name != NEW)


def test_a_rule_with_the_old_name_still_replaces_the_default(caplog: pytest.LogCaptureFixture) -> None:
    mine = {"name": OLD, "kind": "status", "metric": "status", "by": ["group_id"], "level": "STOP"}
    alerts = parse_config({"alerts": {"rules": [mine]}}, environ={}).alerts
    with caplog.at_level(logging.WARNING):
        rules = {r.name: r for r in compile_rules(alerts)}
        compile_rules(alerts)  # every command compiles the rules; the warning is said once
    assert NEW not in rules, "the default would page beside the replacement: twice per group"
    assert rules[OLD].level == "STOP"
    assert _warnings(caplog) == [
        f"alerts.rules '{OLD}': the default rule {OLD} is now named {NEW}; this rule still replaces it for one "
        f"release: rename it to {NEW}"
    ]


def test_a_silence_on_the_old_name_silences_the_renamed_alert(
    alert_config, engine_for, webhook_receiver, caplog: pytest.LogCaptureFixture
) -> None:
    config = alert_config([], use_default_rules=True)
    t0 = time.time()
    create_silence(config, {"alertname": OLD, "group_id": "orders"}, 3600, "on-call", "deploying", starts_at=t0 - 1)
    lake_rows.group_status(config.lake.path, t0, "orders", status="STOP")
    lake_rows.group_status(config.lake.path, t0, "billing", status="STALL")
    with caplog.at_level(logging.WARNING):
        engine_for(config).step(now=t0)

    assert [(a["alertname"], a["group_id"]) for a in _firing(webhook_receiver)] == [(NEW, "billing")]
    assert _events(config, "silenced") == [NEW]
    [warning] = [w for w in _warnings(caplog) if w.startswith("silence ")]
    assert f"matches alertname {OLD}, the old name of {NEW}" in warning and f"should name {NEW}" in warning


def test_an_inhibit_rule_on_the_old_name_still_mutes_it(
    alert_config, engine_for, webhook_receiver, caplog: pytest.LogCaptureFixture
) -> None:
    deploying = {"name": "DeployRunning", "metric": "members", "by": ["group_id"], "op": ">=", "threshold": 0}
    inhibit = [{"source_match": {"alertname": "DeployRunning"}, "target_match": {"alertname": OLD}}]
    with caplog.at_level(logging.WARNING):
        config = alert_config([deploying], use_default_rules=True, inhibit_rules=inhibit)
        compile_rules(config.alerts)
    assert (
        f"alerts.inhibit_rules[0].target_match: alertname {OLD} is now {NEW}; it matches both for one release: "
        f"write {NEW}"
    ) in _warnings(caplog)
    t0 = time.time()
    lake_rows.group_status(config.lake.path, t0, "orders", status="STOP", members=0)
    engine_for(config).step(now=t0)

    assert [a["alertname"] for a in _firing(webhook_receiver)] == ["DeployRunning"]
    assert _events(config, "inhibited") == [NEW]


def test_backtest_rule_with_the_old_name_replays_the_renamed_rule(alert_config, tmp_path: Path) -> None:
    config = alert_config([], use_default_rules=True)
    t0 = time.time() - 600
    t0 -= t0 % 60
    for minute in range(5):
        lake_rows.group_status(config.lake.path, t0 + 60 * minute + 30, "orders", status="STOP")
    path = tmp_path / "config.toml"
    path.write_text(
        f'[cluster]\nname = "test"\nbootstrap_servers = "127.0.0.1:9"\n'
        f'[lake]\npath = "{config.lake.path}"\nduckdb_path = "{config.lake.duckdb_path}"\n'
        f'[alerts]\nstate_dir = "{config.alerts.state_dir}"\n'
    )
    command = [sys.executable, "-m", "shell.cli", "--config", str(path), "alerts", "backtest", "--rule", OLD,
               "--from", rfc3339(t0), "--to", rfc3339(t0 + 300), "--format", "json"]  # fmt: skip
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, env=os.environ, timeout=120)

    assert done.returncode == 0, done.stderr
    [rule] = from_json(done.stdout).rules
    assert rule.name == NEW
    assert [(a.labels["status"], a.labels[PREVIOUS_ALERTNAME_LABEL]) for a in rule.alerts] == [("STOP", OLD)]
    assert f"--rule: rule {OLD} is now named {NEW}; the old name still works for one release: use {NEW}" in (
        done.stderr
    )
    assert json.loads(done.stdout)["rules"][0]["name"] == NEW
