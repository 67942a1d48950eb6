"""Backtesting over lakes written through the lake contract with exact timestamps: a group that
is dead (STOP) for exactly five minutes and then recovers, replayed and run live over the same
evaluation times; and two versions of a lag rule compared through the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from alerts.backtest import backtest
from alerts.evaluate import Grid
from alerts.receivers import rfc3339
from alerts.rules import compile_rules
from harness import lake_rows
from harness.processes import ROOT
from lagwatch.backtest_report import Comparison, from_json
from lagwatch.config import Config, load_config

EVERY_S = 15.0
#: Engine timing as shipped (the fixture's FAST timing would hide group_wait).
TIMING = {"evaluate_every_s": EVERY_S, "group_wait": "30s", "group_interval": "5m", "repeat_interval": "4h"}
T0 = 1_700_000_000.0 - 1_700_000_000.0 % 3600  # a whole hour, so steps and rows line up readably
#: The lake keeps one group_status row per group and minute (the newest), measured near its end.
ROW_S = [T0 + 55.0 + 60.0 * i for i in range(10)]
STOP_AT = ROW_S[2]
DEAD_S = 300.0


def stop_rule(for_: str) -> dict[str, Any]:
    return {"name": "GroupStopped", "kind": "status", "metric": "status", "by": ["group_id"], "level": "STOP",
            "for": for_, "summary": "{group_id} is {status}"}  # fmt: skip


def write_dead_group(lake: str, group: str) -> None:
    """Ten minutes of rows: OK, STOP for DEAD_S from STOP_AT, then OK again."""
    for ts in ROW_S:
        status = "STOP" if STOP_AT <= ts < STOP_AT + DEAD_S else "OK"
        lake_rows.group_status(lake, ts, group, status=status)


def two_receivers(url: str) -> list[dict[str, str]]:
    return [{"name": "ops", "url": url}, {"name": "desk", "url": url}]


def test_a_stop_rule_replays_to_one_alert_and_the_live_engine_agrees(alert_config, engine_for, webhook_receiver):
    config: Config = alert_config([stop_rule("1m")], receivers=two_receivers(webhook_receiver.url), **TIMING)
    write_dead_group(config.lake.path, "payments")
    grid = Grid.over(T0, T0 + 600, EVERY_S)

    report = backtest(config, compile_rules(config.alerts), ["GroupStopped"], grid)

    [rule] = report.rules
    [alert] = rule.alerts
    assert alert.labels["group_id"] == "payments"
    assert STOP_AT + 60 <= alert.starts_at < STOP_AT + 60 + EVERY_S
    assert alert.ends_at is not None and STOP_AT + DEAD_S <= alert.ends_at < STOP_AT + DEAD_S + EVERY_S
    firing = [n for n in rule.notifications if n.kind == "firing"]
    assert sorted(n.receiver for n in firing) == ["desk", "ops"]
    assert all(n.sent_at == alert.starts_at + 30 for n in firing)  # group_wait
    assert rule.totals["by_receiver"] == {"desk": 2, "ops": 2}  # firing, then resolved
    [change] = report.status_changes
    assert (change.group_id, change.status, change.at) == ("payments", "STOP", STOP_AT)
    assert change.delays == {"GroupStopped": firing[0].sent_at - STOP_AT}
    state_dir = config.resolve_path(config.alerts.state_dir)
    assert not (state_dir / "engine.sqlite").exists(), "a backtest must not touch the engine's state"
    assert webhook_receiver.received() == [], "a backtest must not send"

    engine = engine_for(config)
    for step in range(grid.steps):
        engine.step(now=grid.at(step))
    live = [r.json() for r in webhook_receiver.received() if r.json()["status"] == "firing"]
    assert len(live) == 2  # one per receiver
    assert {a["startsAt"] for payload in live for a in payload["alerts"]} == {rfc3339(alert.starts_at)}


def test_a_longer_for_than_the_outage_raises_nothing(alert_config, webhook_receiver):
    config = alert_config([stop_rule("10m")], receivers=two_receivers(webhook_receiver.url), **TIMING)
    write_dead_group(config.lake.path, "payments")

    report = backtest(config, compile_rules(config.alerts), ["GroupStopped"], Grid.over(T0, T0 + 600, EVERY_S))

    assert report.rules[0].alerts == [] and report.rules[0].notifications == []
    assert [c.delays for c in report.status_changes] == [{"GroupStopped": None}]


def _rules_file(path: Path, threshold: float) -> Path:
    rule = {"name": "TimeLagHigh", "metric": "max_time_lag_s", "by": ["group_id"], "threshold": threshold,
            "for": "1m"}  # fmt: skip
    lines = ["[[alerts.rules]]", *(f"{k} = {json.dumps(v)}" for k, v in rule.items())]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_against_lists_the_alerts_only_the_tighter_rule_raises(alert_config, tmp_path, webhook_receiver):
    config = alert_config([], receivers=two_receivers(webhook_receiver.url), **TIMING)
    for ts in ROW_S:
        lake_rows.group_status(config.lake.path, ts, "slow", max_time_lag_s=120.0)  # only over 60
        lake_rows.group_status(config.lake.path, ts, "stuck", max_time_lag_s=900.0)  # over both
    config_file = tmp_path / "config.toml"
    config_file.write_text(_toml(config))
    loose, tight = _rules_file(tmp_path / "loose.toml", 300), _rules_file(tmp_path / "tight.toml", 60)
    command = [sys.executable, "-m", "shell.cli", "--config", str(config_file), "alerts", "backtest",
               "--rules", str(loose), "--against", str(tight), "--from", rfc3339(T0), "--to", rfc3339(T0 + 600),
               "--format", "json"]  # fmt: skip
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, env=os.environ, timeout=120)
    assert done.returncode == 0, done.stderr

    result = from_json(done.stdout)

    assert isinstance(result, Comparison)
    assert result.only_a == []
    assert [(a.rule, a.labels["group_id"]) for a in result.only_b] == [("TimeLagHigh", "slow")]
    assert [a.labels["group_id"] for a in result.a.rules[0].alerts] == ["stuck"]
    assert "backtest progress" in done.stderr


def test_a_bad_rules_file_names_the_file_and_the_key(alert_config, tmp_path):
    config = alert_config([])
    config_file = tmp_path / "config.toml"
    config_file.write_text(_toml(config))
    bad = tmp_path / "bad.toml"
    bad.write_text('[[alerts.rules]]\nname = "X"\nmetric = "max_time_lag_s"\nfor = "soon"\n')
    command = [sys.executable, "-m", "shell.cli", "--config", str(config_file), "alerts", "backtest",
               "--rules", str(bad)]  # fmt: skip
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, env=os.environ, timeout=120)
    assert done.returncode == 2
    assert str(bad) in done.stderr and "alerts.rules 'X': for" in done.stderr


def _toml(config: Config) -> str:
    """The test config as a file, for the CLI (only the sections these tests set)."""
    alerts = config.alerts
    receivers = "".join(f'[[alerts.receivers]]\nname = "{r.name}"\nurl = "{r.url}"\n' for r in alerts.receivers)
    return (
        f'[cluster]\nname = "{config.cluster.name}"\nbootstrap_servers = "{config.cluster.bootstrap_servers}"\n'
        f'[lake]\npath = "{config.lake.path}"\nduckdb_path = "{config.lake.duckdb_path}"\n'
        f'[alerts]\nstate_dir = "{alerts.state_dir}"\nuse_default_rules = false\n'
        f'evaluate_every_s = {alerts.evaluate_every_s}\ngroup_wait = "{alerts.group_wait}"\n'
        f'group_interval = "{alerts.group_interval}"\n{receivers}'
    )


def two_cluster_config(tmp_path: Path, receiver_url: str) -> tuple[Config, Path]:
    """[[clusters]] home and second, the stop rule, and the file the CLI reads."""
    text = (
        '[[clusters]]\nname = "home"\nbootstrap_servers = "127.0.0.1:9"\n'
        '[[clusters]]\nname = "second"\nbootstrap_servers = "127.0.0.1:9"\n'
        f'[lake]\npath = "{tmp_path / "lake"}"\nduckdb_path = "{tmp_path / "lagwatch.duckdb"}"\n'
        f'[alerts]\nstate_dir = "{tmp_path / "alerts"}"\nuse_default_rules = false\nleadership = "none"\n'
        + "".join(f"{k} = {json.dumps(v)}\n" for k, v in TIMING.items())
        + f'[[alerts.receivers]]\nname = "ops"\nurl = "{receiver_url}"\n[[alerts.rules]]\n'
        + "".join(f"{k} = {json.dumps(v)}\n" for k, v in stop_rule("1m").items())
    )
    path = tmp_path / "config.toml"
    path.write_text(text)
    return load_config(path), path


def test_every_cluster_is_replayed_or_the_one_named(tmp_path, webhook_receiver):
    """The live engine reads every configured cluster, so the backtest does: the same dead group
    name on both clusters is two alerts and two status changes, each under its cluster."""
    config, path = two_cluster_config(tmp_path, webhook_receiver.url)
    for cluster in ("home", "second"):
        for ts in ROW_S:
            status = "STOP" if STOP_AT <= ts < STOP_AT + DEAD_S else "OK"
            lake_rows.group_status(config.lake.path, ts, "payments", status=status, cluster=cluster)
    grid = Grid.over(T0, T0 + 600, EVERY_S)

    report = backtest(config, compile_rules(config.alerts), ["GroupStopped"], grid)

    assert report.clusters == ["home", "second"]
    assert sorted(a.labels["cluster"] for a in report.rules[0].alerts) == ["home", "second"]
    changes = sorted((c.cluster, c.group_id, c.status, c.at) for c in report.status_changes)
    assert changes == [("home", "payments", "STOP", STOP_AT), ("second", "payments", "STOP", STOP_AT)]
    assert all(c.delays["GroupStopped"] is not None for c in report.status_changes), "each notified"

    command = [sys.executable, "-m", "shell.cli", "--config", str(path), "alerts", "backtest", "--cluster",
               "second", "--from", rfc3339(T0), "--to", rfc3339(T0 + 600), "--format", "json"]  # fmt: skip
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, env=os.environ, timeout=120)
    assert done.returncode == 0, done.stderr
    only = from_json(done.stdout)
    assert only.clusters == ["second"]
    assert [a.labels["cluster"] for a in only.rules[0].alerts] == ["second"]
    assert [(c.cluster, c.at) for c in only.status_changes] == [("second", STOP_AT)]

    done = subprocess.run([*command[:8], "third"], cwd=ROOT, capture_output=True, text=True, env=os.environ)
    assert done.returncode == 2
    assert "--cluster: no cluster 'third' in the config (clusters: home, second)" in done.stderr
