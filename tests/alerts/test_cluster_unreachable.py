"""A cluster that cannot be read pages once, not once per group: the default rules and inhibition.

Two configured clusters and the shipped default rules, run by the real engine over a real lake
to a real webhook receiver. The "down" cluster's admin collector failed (`up` = 0 from source
admin) and the Spark job judged its three groups ERR; the "home" cluster answers and has one
STALL group. One ClusterUnreachable must reach the receiver for "down" and no
ConsumerGroupUnhealthy for its groups (inhibited: recorded in alert_events), while home's STALL
group still pages.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest

from alerts.rules import compile_rules
from harness import lake_rows
from lagwatch.config import Config, ConfigError, parse_config
from lagwatch.lake import connect_readonly
from tests.alerts.conftest import FAST

DOWN_GROUPS = ("orders-app", "billing", "audit")


def two_cluster_config(tmp_path: Path, receiver_url: str, **alerts: Any) -> Config:
    receivers = [{"name": "ops", "type": "webhook", "url": receiver_url}]
    clusters = [{"name": name, "bootstrap_servers": "127.0.0.1:9"} for name in ("home", "down")]
    data = {
        "clusters": clusters,
        "lake": {"path": str(tmp_path / "lake"), "duckdb_path": str(tmp_path / "lagwatch.duckdb")},
        "alerts": {**FAST, "state_dir": str(tmp_path / "alerts"), "receivers": receivers, **alerts},
    }
    return parse_config(data, environ={})


def admin_up(lake: str, ts: float, cluster: str, value: float) -> None:
    lake_rows.metric(lake, ts, "up", value, cluster=cluster, source="admin")


def firing(webhook_receiver: Any) -> list[tuple[str, str, str]]:
    """(alertname, cluster, group_id) of every firing alert delivered."""
    return sorted(
        (a["labels"]["alertname"], a["labels"]["cluster"], a["labels"].get("group_id", ""))
        for a in webhook_receiver.alerts()
    )


@pytest.fixture
def down_at(tmp_path: Path, webhook_receiver: Any) -> tuple[Config, float]:
    """The two-cluster config, and the time at which "down"'s admin collector failed (`up` = 0)."""
    config = two_cluster_config(tmp_path, webhook_receiver.url)
    t0 = time.time()
    admin_up(config.lake.path, t0, "down", 0.0)
    return config, t0


def test_a_down_cluster_pages_once_and_its_groups_are_inhibited(
    down_at: tuple[Config, float], webhook_receiver: Any, engine_for: Any
) -> None:
    config, t0 = down_at
    lake = config.lake.path
    admin_up(lake, t0, "home", 1.0)
    for group in DOWN_GROUPS:
        lake_rows.group_status(lake, t0, group, "ERR", cluster="down")
    lake_rows.group_status(lake, t0, "payments", "STALL", cluster="home")
    engine = engine_for(config)

    engine.step(now=t0)
    engine.step(now=t0 + 2)
    assert firing(webhook_receiver) == [("ConsumerGroupUnhealthy", "home", "payments")], (
        "while ClusterUnreachable waits out its `for`, it already mutes the down cluster's groups"
    )
    engine.step(now=t0 + 62)  # still down a minute on: the page

    assert firing(webhook_receiver) == [
        ("ClusterUnreachable", "down", ""),
        ("ConsumerGroupUnhealthy", "home", "payments"),
    ]
    [page] = [a for r in webhook_receiver.received() for a in r.json()["alerts"]
              if a["labels"]["alertname"] == "ClusterUnreachable"]  # fmt: skip
    assert (page["labels"]["severity"], page["labels"]["category"]) == ("critical", "cluster_down")
    con = connect_readonly(lake, config.lake.duckdb_path)
    try:
        inhibited = con.execute(
            "SELECT cluster, json_extract_string(labels, 'group_id') FROM alert_events "
            "WHERE event = 'inhibited' AND alertname = 'ConsumerGroupUnhealthy'"
        ).fetchall()
    finally:
        con.close()
    assert sorted(inhibited) == sorted(("down", g) for g in DOWN_GROUPS)


def statuses(webhook_receiver: Any) -> list[tuple[str, str]]:
    return [(a["labels"]["alertname"], a["status"]) for r in webhook_receiver.received() for a in r.json()["alerts"]]


def test_once_the_cluster_answers_again_the_page_resolves(
    down_at: tuple[Config, float], webhook_receiver: Any, engine_for: Any
) -> None:
    config, t0 = down_at
    engine = engine_for(config)
    engine.step(now=t0)
    engine.step(now=t0 + 62)
    admin_up(config.lake.path, t0 + 63, "down", 1.0)  # the same minute's window, rewritten by a later batch
    engine.step(now=t0 + 64)

    assert statuses(webhook_receiver) == [("ClusterUnreachable", "firing"), ("ClusterUnreachable", "resolved")]


def test_one_failed_cycle_is_no_page(down_at: tuple[Config, float], webhook_receiver: Any, engine_for: Any) -> None:
    config, t0 = down_at
    engine = engine_for(config)
    engine.step(now=t0)
    admin_up(config.lake.path, t0 + 15, "down", 1.0)  # the next cycle answered
    engine.step(now=t0 + 16)
    engine.step(now=t0 + 80)

    assert statuses(webhook_receiver) == []


@pytest.mark.parametrize(
    ("rule", "error"),
    [
        ({"metric": "up", "source": "adminn", "op": "==", "threshold": 0}, "source: unknown sample source 'adminn'"),
        ({"metric": "total_lag", "source": "admin"}, "source: only rules over metrics_1m / metrics_10s"),
    ],
)
def test_a_rule_source_must_be_a_sample_source_and_only_on_metrics(
    rule: dict[str, Any], error: str, tmp_path: Path
) -> None:
    config = two_cluster_config(tmp_path, "http://127.0.0.1:9/hook", rules=[{"name": "R", **rule}],
                                use_default_rules=False)  # fmt: skip
    with pytest.raises(ConfigError, match=re.escape(f"alerts.rules 'R': {error}")):
        compile_rules(config.alerts)
