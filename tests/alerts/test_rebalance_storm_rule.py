"""RebalanceStorm: a default rule that ships switched off, on `group_status.storm_rebalances`.

Off until `[alerts] enable_rules` names it; a name there that is not an off-by-default rule is
refused naming the key; a backtest that names the rule replays it either way. Evaluated by the
real engine over group_status Parquet rows written through the lake contract, including a file
written before the column existed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from alerts.receivers import rfc3339
from alerts.rules import OFF_BY_DEFAULT_RULES, compile_rules, effective_rules
from harness import lake_rows
from harness.processes import ROOT
from lagwatch import lake as lakelib
from lagwatch.backtest_report import Report, from_json
from lagwatch.config import ConfigError, parse_config

RULE = "RebalanceStorm"
STORM_REASON = "OK: caught up [t/0]; rebalance storm: 7 rebalances in 10m"


def rule_names(**alerts: Any) -> list[str]:
    return [r.name for r in compile_rules(parse_config({"alerts": alerts}, environ={}).alerts)]


def test_the_rule_is_off_by_default_and_on_when_enabled() -> None:
    assert RULE in OFF_BY_DEFAULT_RULES
    assert RULE not in rule_names()
    assert RULE in rule_names(enable_rules=[RULE])
    assert RULE not in rule_names(enable_rules=[RULE], use_default_rules=False), "enable_rules needs the defaults"


def test_a_configured_rule_of_the_same_name_still_replaces_it() -> None:
    mine = {"name": RULE, "metric": "rebalances", "by": ["group_id"], "op": ">=", "threshold": 3}
    alerts = parse_config({"alerts": {"enable_rules": [RULE], "rules": [mine]}}, environ={}).alerts
    [rule] = [r for r in effective_rules(alerts) if r.name == RULE]
    assert (rule.metric, rule.threshold) == ("rebalances", 3)


def test_an_unknown_name_in_enable_rules_is_refused_naming_the_key_and_the_valid_names() -> None:
    with pytest.raises(ConfigError) as refused:
        rule_names(enable_rules=["RebalanceStrom"])
    message = str(refused.value)
    assert "alerts.enable_rules" in message and "'RebalanceStrom'" in message and RULE in message
    with pytest.raises(ConfigError, match=r"alerts\.enable_rules: unknown rule.*'BrokerDown'"):
        rule_names(enable_rules=["BrokerDown"])  # on already: only off-by-default rules can be named


def _summaries(webhook_receiver: Any) -> dict[str, str]:
    """group_id -> summary of the RebalanceStorm alerts delivered."""
    alerts = [a for request in webhook_receiver.received() for a in request.json()["alerts"]]
    return {a["labels"]["group_id"]: a["annotations"]["summary"] for a in alerts if a["labels"]["alertname"] == RULE}


def _write_row_before_the_column(lake: str, ts: float, group_id: str) -> None:
    """A group_status file as written before storm_rebalances existed (the column absent)."""
    import pyarrow.parquet as pq

    row = {"cluster": "test", "group_id": group_id, "status": "OK", "reason": "OK", "rebalances": 9,
           "window_start": lake_rows.at(ts - ts % 60), "updated_at": lake_rows.at(ts), "version": 1}  # fmt: skip
    old = lakelib.rows_to_arrow("group_status", [row]).drop_columns(["storm_rebalances"])
    path = lakelib.table_dir(lake, "group_status") / f"date={lake_rows.at(ts).date().isoformat()}" / "old.parquet"
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(old, path)


def test_enabled_it_fires_on_a_storm_and_not_at_zero_nor_on_older_rows(
    alert_config, engine_for, webhook_receiver
) -> None:
    config = alert_config([], use_default_rules=True, enable_rules=[RULE])
    t0 = time.time()
    lake_rows.group_status(config.lake.path, t0, "stormy", storm_rebalances=7, rebalances=7, reason=STORM_REASON)
    lake_rows.group_status(config.lake.path, t0, "calm", storm_rebalances=0, rebalances=2, reason="OK: 2 rebalances")
    _write_row_before_the_column(config.lake.path, t0, "old")
    engine_for(config).step(now=t0)

    assert _summaries(webhook_receiver) == {
        "stormy": f"Consumer group stormy is in a rebalance storm: 7 rebalances ({STORM_REASON})"
    }


def test_not_enabled_it_does_not_fire_on_a_storm(alert_config, engine_for, webhook_receiver) -> None:
    config = alert_config([], use_default_rules=True)
    t0 = time.time()
    lake_rows.group_status(config.lake.path, t0, "stormy", storm_rebalances=7, reason=STORM_REASON)
    engine_for(config).step(now=t0)
    assert _summaries(webhook_receiver) == {}


def _config_file(tmp_path: Path, alerts: dict[str, Any]) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(
        '[cluster]\nname = "test"\nbootstrap_servers = "127.0.0.1:9"\n'
        f'[lake]\npath = "{tmp_path / "lake"}"\nduckdb_path = "{tmp_path / "lagwatch.duckdb"}"\n'
        f'[alerts]\nstate_dir = "{tmp_path / "alerts"}"\nleadership = "none"\n'
        + "".join(f"{key} = {json.dumps(value)}\n" for key, value in alerts.items())
    )
    return path


def _lagwatch(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "shell.cli", *args]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, env=os.environ, timeout=120)


def test_a_backtest_naming_the_rule_replays_it_though_it_is_not_enabled(tmp_path: Path) -> None:
    t0 = time.time() - time.time() % 60 - 600
    path = _config_file(tmp_path, {"evaluate_every_s": 15})
    for minute in range(5):
        storm = 6 if minute >= 2 else 0
        lake_rows.group_status(tmp_path / "lake", t0 + 60 * minute + 55, "stormy", storm_rebalances=storm)

    done = _lagwatch("--config", str(path), "alerts", "backtest", "--rule", RULE, "--from", rfc3339(t0),
                     "--to", rfc3339(t0 + 300), "--format", "json")  # fmt: skip

    assert done.returncode == 0, done.stderr
    report = from_json(done.stdout)
    assert isinstance(report, Report)
    [rule] = report.rules
    assert rule.name == RULE
    [alert] = rule.alerts
    assert alert.labels["group_id"] == "stormy" and alert.starts_at >= t0 + 120 + 55, "from the first storm row"


def test_the_cli_refuses_an_unknown_name_in_enable_rules(tmp_path: Path) -> None:
    path = _config_file(tmp_path, {"enable_rules": ["RebalanceStrom"]})
    done = _lagwatch("--config", str(path), "alerts", "backtest", "--list-rules")
    assert done.returncode == 2, done.stderr
    assert "alerts.enable_rules" in done.stderr and "RebalanceStrom" in done.stderr and RULE in done.stderr
