"""A lake built from known samples, and the config that points the dashboard at it.

The rows are written with the lake's own writer (`lagwatch.lake.write_rows`), exactly as the
Spark job and the alert engine write them, so the dashboard reads real Parquet files through
the real views. Times are anchored to the current minute so the default "last hour" shows
them. Tests derive every expected number from `KnownLake.rows`, never from a constant.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from lagwatch import lake as lakelib
from shell.broker import free_port

CLUSTER = "test-cluster"


@dataclass
class KnownLake:
    root: Path
    config_path: Path
    port: int
    now: dt.datetime
    rows: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def latest(self, table: str, **match: Any) -> list[dict[str, Any]]:
        """Rows of `table` matching `match` (newest version per key is what the views keep)."""
        return [r for r in self.rows[table] if all(r.get(k) == v for k, v in match.items())]


def newest(rows: Iterable[dict[str, Any]], key: tuple[str, ...], order: tuple[str, ...]) -> list[dict[str, Any]]:
    """One row per key: the greatest `order` (what the views and 'latest' queries keep)."""
    best: dict[tuple[Any, ...], dict[str, Any]] = {}
    for row in rows:
        k = tuple(row.get(f) for f in key)
        if k not in best or tuple(row[o] for o in order) > tuple(best[k][o] for o in order):
            best[k] = row
    return list(best.values())


def broker_gauges(lake: KnownLake, metric: str) -> dict[str, float]:
    rows = [r for r in lake.rows["metrics_1m"] if r["metric"] == metric and r.get("broker") and not r.get("topic")]
    rows = [r for r in rows if r["source"] == "jmx"]
    return {r["broker"]: r["last"] for r in newest(rows, ("broker",), ("window_start", "version"))}


def group_status(lake: KnownLake) -> pd.DataFrame:
    return pd.DataFrame(newest(lake.rows["group_status"], ("group_id",), ("updated_at", "version")))


def _metric(ts: dt.datetime, metric: str, value: float, rate: float | None = None, **labels: Any) -> dict[str, Any]:
    source = labels.pop("source", "jmx")
    return {
        "cluster": CLUSTER,
        "window_start": ts,
        "window_end": ts + dt.timedelta(minutes=1),
        "source": source,
        "metric": metric,
        "kind": "counter" if rate is not None else "gauge",
        "samples": 4,
        "min": value,
        "max": value,
        "avg": value,
        "first": value,
        "last": value,
        "rate_per_s": rate,
        "version": labels.pop("version", 1),
        **labels,
    }


def _broker_rows(t: dt.datetime) -> list[dict[str, Any]]:
    gauges = {
        "up": {"1": 1, "2": 1, "3": 0},
        "active_controller_count": {"1": 1, "2": 0, "3": 0},
        "under_replicated_partitions": {"1": 2, "2": 3, "3": 0},
        "offline_partitions": {"1": 0, "2": 0, "3": 1},
        "under_min_isr_partitions": {"1": 1, "2": 0, "3": 0},
        "partition_count": {"1": 10, "2": 12, "3": 8},
        "leader_count": {"1": 5, "2": 4, "3": 3},
        "request_handler_avg_idle_percent": {"1": 0.9, "2": 0.5, "3": 0.7},
        "network_processor_avg_idle_percent": {"1": 0.8, "2": 0.6, "3": 0.7},
        "scrape_duration_seconds": {"1": 0.02, "2": 0.03, "3": 5.0},
    }
    rows = [_metric(t, m, float(v), broker=b) for m, per in gauges.items() for b, v in per.items()]
    # An older window says broker 3 was up: the newest window must win for the tile.
    rows.append(_metric(t - dt.timedelta(minutes=3), "up", 1.0, broker="3"))
    for minute in range(1, 6):
        ts = t - dt.timedelta(minutes=minute - 1)
        for broker, rate in {"1": 100.0, "2": 200.0, "3": 0.0}.items():
            rows.append(_metric(ts, "messages_in_total", 1e6, rate, broker=broker))
            rows.append(_metric(ts, "bytes_in_total", 1e9, rate * 1000, broker=broker))
            rows.append(_metric(ts, "bytes_out_total", 2e9, rate * 2000, broker=broker))
            elections = 1 / 60 if (broker == "2" and minute == 3) else 0.0
            rows.append(_metric(ts, "leader_elections_total", 7.0, elections, broker=broker))
    rows.append(_metric(t, "up", 1.0, source="admin", client_id="admin@cluster"))
    rows.append(_metric(t, "scrape_duration_seconds", 0.4, source="admin", client_id="admin@cluster"))
    return rows


def _topic_rows(t: dt.datetime, range_start: dt.datetime) -> list[dict[str, Any]]:
    offsets = {("orders", 0): (10_000, 10_600), ("orders", 1): (20_000, 20_300), ("payments", 0): (500, 560)}
    rows = []
    for (topic, partition), (first, last) in offsets.items():
        rows.append(_metric(range_start, "log_end_offset", first, source="admin", topic=topic, partition=partition))
        rows.append(_metric(t, "log_end_offset", last, source="admin", topic=topic, partition=partition))
    for topic, broker, rate in (("orders", "1", 40.0), ("orders", "2", 2.0), ("payments", "1", 0.5)):
        rows.append(_metric(t, "messages_in_total", 1e5, rate, broker=broker, topic=topic))
        rows.append(_metric(t, "bytes_in_total", 1e8, rate * 500, broker=broker, topic=topic))
        rows.append(_metric(t, "bytes_out_total", 1e8, rate * 900, broker=broker, topic=topic))
    return rows


def _heartbeat_rows(t: dt.datetime) -> list[dict[str, Any]]:
    values = {
        "collector_samples_produced_total": (5000.0, 50.0),
        "collector_samples_delivered_total": (4990.0, 49.0),
        "collector_samples_failed_total": (10.0, 0.1),
        "collector_targets_assigned": (4.0, None),
    }
    return [_metric(t, m, v, r, source="heartbeat", client_id="collector-a") for m, (v, r) in values.items()]


#: Who owns each group partition (member id, client id, host); billing's partition is unassigned.
OWNERS = {
    ("orders-app", "orders", 0): ("orders-app-1-5c1f", "orders-app-1", "/10.0.0.11"),
    ("orders-app", "orders", 1): ("orders-app-2-77ab", "orders-app-2", "/10.0.0.12"),
    ("audit", "orders", 0): ("audit-1-0d9e", "audit-1", "/10.0.0.21"),
}


#: billing is a consumer (KIP-848) group: its partition is assigned to billing-2, not yet reconciled.
PENDING = {("billing", "payments", 0): "billing-2 on /10.0.0.32"}
#: billing's member epochs as the commit log published them (an older minute had a member since gone).
MEMBER_EPOCHS = {0: {"billing-1": 7, "billing-2": 6}, 1: {"billing-0": 5, "billing-1": 5}}
GROUP_EPOCH = 7


def _member_epoch_rows(t: dt.datetime) -> list[dict[str, Any]]:
    return [
        _metric(t - dt.timedelta(minutes=ago), "consumer_group_member_epoch", epoch, source="commitlog",
                group_id="billing", client_id=client)
        for ago, members in MEMBER_EPOCHS.items()
        for client, epoch in members.items()
    ]  # fmt: skip


def _lag_rows(t: dt.datetime) -> list[dict[str, Any]]:
    partitions = [
        ("orders-app", "orders", 0, 3000, 0.0, 5.0, 95.5, None, "STALL"),
        ("orders-app", "orders", 1, 1200, 0.0, 5.0, 60.0, None, "STALL"),
        ("billing", "payments", 0, 7, 2.0, 2.0, 0.5, 3.5, "OK"),
        ("audit", "orders", 0, 1234, 4.0, 3.0, 300.0, 1234.0, "WARN"),
    ]
    rows = []
    for minutes_ago in (0, 1, 2):
        ts = t - dt.timedelta(minutes=minutes_ago)
        for group, topic, partition, lag, consume, produce, time_lag, eta, status in partitions:
            grown = lag - 100 * minutes_ago if lag > 100 else lag
            rows.append(
                {
                    "cluster": CLUSTER,
                    "window_start": ts,
                    "window_end": ts + dt.timedelta(minutes=1),
                    "group_id": group,
                    "topic": topic,
                    "partition": partition,
                    "committed_offset": 10_000 - grown,
                    "end_offset": 10_000,
                    "lag": grown,
                    "lag_max": grown,
                    "consume_rate": consume,
                    "produce_rate": produce,
                    "time_lag_s": time_lag,
                    "time_lag_method": "interpolated",
                    # An older window's ETA where the newest has none: a per-column "latest"
                    # that skips NULLs would show it; the newest row says "not catching up".
                    "eta_s": eta if eta is not None or minutes_ago == 0 else 600.0,
                    "rate_span_s": 45.0,
                    "status": status,
                    "reason": f"{status.lower()} reason",
                    "owner_member_id": OWNERS.get((group, topic, partition), (None,) * 3)[0],
                    "owner_client_id": OWNERS.get((group, topic, partition), (None,) * 3)[1],
                    "owner_host": OWNERS.get((group, topic, partition), (None,) * 3)[2],
                    "owner_changes": 1 if (group, minutes_ago) == ("audit", 0) else 0,
                    "owner_pending": PENDING.get((group, topic, partition)) if minutes_ago == 0 else None,
                    "version": 1,
                }
            )
    return rows


#: Rows whose blanks a reader must still understand: a STOP group 2,250 behind whose time lag is only
#: a lower bound (its commit is older than the log-end history), nobody owning its partition, no ETA;
#: and a group seen once: no time lag at all, no rates, not described.
ROUGH_GROUPS = {
    "reports": {"topic": "orders", "partition": 2, "lag": 2250, "time_lag_s": 206.0,
                "time_lag_method": "commit_age_lower_bound", "consume_rate": 0.0, "produce_rate": 0.0,
                "rate_span_s": 45.0, "status": "STOP", "group_state": "Empty", "members": 0},
    "newcomer": {"topic": "payments", "partition": 0, "lag": 40, "time_lag_s": None, "time_lag_method": "unknown",
                 "consume_rate": None, "produce_rate": None, "rate_span_s": 0.0, "status": "OK",
                 "group_state": None, "members": None},
}  # fmt: skip


def _rough_lag_rows(t: dt.datetime) -> list[dict[str, Any]]:
    return [
        {
            "cluster": CLUSTER,
            "window_start": t,
            "window_end": t + dt.timedelta(minutes=1),
            "group_id": group,
            "topic": g["topic"],
            "partition": g["partition"],
            "committed_offset": 10_000 - g["lag"],
            "end_offset": 10_000,
            "lag": g["lag"],
            "lag_max": g["lag"],
            "consume_rate": g["consume_rate"],
            "produce_rate": g["produce_rate"],
            "time_lag_s": g["time_lag_s"],
            "time_lag_method": g["time_lag_method"],
            "eta_s": None,
            "rate_span_s": g["rate_span_s"],
            "status": g["status"],
            "reason": f"{g['status']}: rough edge",
            "version": 1,
        }
        for group, g in ROUGH_GROUPS.items()
    ]


def _rough_status_rows(t: dt.datetime) -> list[dict[str, Any]]:
    return [
        {
            "cluster": CLUSTER,
            "group_id": group,
            "status": g["status"],
            "reason": f"{g['status']}: rough edge",
            "rule": "stop" if g["status"] == "STOP" else "ok",
            "total_lag": g["lag"],
            "max_lag": g["lag"],
            "max_time_lag_s": g["time_lag_s"],
            "max_time_lag_method": g["time_lag_method"],
            "partitions": 1,
            "topics": g["topic"],
            "group_state": g["group_state"],
            "members": g["members"],
            "rebalances": 0,
            "window_start": t,
            "updated_at": t,
            "version": 2,
        }
        for group, g in ROUGH_GROUPS.items()
    ]


def _status_rows(t: dt.datetime) -> list[dict[str, Any]]:
    def row(group: str, status: str, reason: str, total: int, max_lag: int, time_lag: float, ts: dt.datetime, **kw):  # type: ignore[no-untyped-def]
        return {
            "cluster": CLUSTER,
            "group_id": group,
            "status": status,
            "reason": reason,
            "rule": "burrow",
            "total_lag": total,
            "max_lag": max_lag,
            "max_time_lag_s": time_lag,
            "partitions": kw.get("partitions", 1),
            "topics": kw.get("topics", "orders"),
            "group_state": kw.get("group_state", "Stable"),
            "members": kw.get("members", 1),
            "rebalances": kw.get("rebalances", 0),
            "group_type": kw.get("group_type", "classic"),
            "group_epoch": kw.get("group_epoch"),
            "window_start": ts.replace(second=0, microsecond=0),
            "updated_at": ts,
            "version": kw.get("version", 2),
        }

    earlier = t - dt.timedelta(minutes=20)
    return [
        row("orders-app", "OK", "caught up", 0, 0, 0.0, earlier, partitions=2),
        # Same key twice: version 1 was rewritten by version 2 (a window still open); v2 wins.
        row("orders-app", "WARN", "lag rising", 3900, 2900, 80.0, t, partitions=2, version=1),
        row("orders-app", "STALL", "offsets not moving while lag > 0", 4200, 3000, 95.5, t, partitions=2),
        row(
            "billing",
            "OK",
            "caught up",
            7,
            7,
            0.5,
            t,
            topics="payments",
            group_type="consumer",
            group_epoch=GROUP_EPOCH,
        ),
        row("audit", "WARN", "lag rising over the window", 1234, 1234, 300.0, t, rebalances=1),
    ]


def _alert_rows(t: dt.datetime) -> list[dict[str, Any]]:
    def event(key: str, kind: str, minutes_ago: int, name: str, seq: int) -> dict[str, Any]:
        return {
            "cluster": CLUSTER,
            "ts": t - dt.timedelta(minutes=minutes_ago),
            "event": kind,
            "alertname": name,
            "incident_key": key,
            "seq": seq,
            "severity": "warning",
            "labels": json.dumps({"alertname": name, "group_id": "orders-app"}),
            "value": 4200.0,
            "receiver": "ops",
            "detail": "",
            "event_id": f"{key}-{kind}-{seq}",
            "version": 1,
        }

    return [
        event("lag-orders-app", "firing", 15, "ConsumerLagHigh", 1),
        event("lag-orders-app", "delivered", 15, "ConsumerLagHigh", 1),
        event("broker-3-down", "firing", 40, "BrokerDown", 1),
        event("broker-3-down", "delivered", 40, "BrokerDown", 1),
        event("broker-3-down", "resolved", 30, "BrokerDown", 2),
    ]


def _progress_rows(t: dt.datetime) -> list[dict[str, Any]]:
    rows = []
    for i, seconds_ago in enumerate((90, 60, 30)):
        ts = t + dt.timedelta(seconds=50 - seconds_ago)
        rows.append(
            {
                "cluster": CLUSTER,
                "query": "windows",
                "batch_id": 100 + i,
                "ts": ts,
                "input_rows": 3000,
                "input_rows_per_s": 1500.0 + i,
                "processed_rows_per_s": 9000.0,
                "batch_duration_ms": 400 + i,
                "watermark": ts - dt.timedelta(seconds=30),
                "freshness_s": 3.4 + i,
                "version": 1,
            }
        )
    return rows


def _dead_rows(t: dt.datetime) -> list[dict[str, Any]]:
    errors = ["invalid JSON", "invalid JSON", "invalid JSON", "ts: expected int"]
    return [
        {
            "cluster": CLUSTER,
            "received_at": t - dt.timedelta(minutes=i),
            "source_topic": "lagwatch.samples",
            "source_partition": 0,
            "source_offset": 40 + i,
            "raw": "{not json" if error == "invalid JSON" else '{"ts":"x"}',
            "error": error,
            "version": 1,
        }
        for i, error in enumerate(errors)
    ]


def write_lake(root: Path, rows: dict[str, list[dict[str, Any]]], batch: str) -> tuple[Path, Path]:
    """`rows` per table written as real Parquet under root/lake, and the views file: (lake, views)."""
    lake_dir, views = root / "lake", root / "lagwatch.duckdb"
    lakelib.ensure_lake(lake_dir)
    for table, table_rows in rows.items():
        lakelib.write_rows(lake_dir, table, lakelib.rows_to_arrow(table, table_rows), batch)
    lakelib.write_views_file(lake_dir, views)
    return lake_dir, views


def build_known_lake(root: Path) -> KnownLake:
    now = dt.datetime.now(dt.UTC).replace(second=0, microsecond=0)
    t = now - dt.timedelta(minutes=2)
    range_start = now - dt.timedelta(minutes=55)
    rows = {
        "metrics_1m": [*_broker_rows(t), *_topic_rows(t, range_start), *_heartbeat_rows(t), *_member_epoch_rows(t)],
        "lag_1m": [*_lag_rows(t), *_rough_lag_rows(t)],
        "group_status": [*_status_rows(t), *_rough_status_rows(t)],
        "alert_events": _alert_rows(t),
        "pipeline_progress": _progress_rows(t),
        "dead_letters": _dead_rows(t),
    }
    lake_dir, views = write_lake(root, rows, "fixture")
    port = free_port()
    config_path = root / "config.toml"
    config_path.write_text(
        f"""
[cluster]
name = "{CLUSTER}"
bootstrap_servers = "127.0.0.1:9"

[lake]
path = "{lake_dir.as_posix()}"
duckdb_path = "{views.as_posix()}"

[[jmx.targets]]
broker = "1"
host = "127.0.0.1"
port = 9999

[dashboard]
host = "127.0.0.1"
port = {port}
refresh_s = 30

[alerts]
run = false
"""
    )
    return KnownLake(root=root, config_path=config_path, port=port, now=now, rows=rows)


#: A second monitored cluster in the lake, down now: its admin collector's newest cycle failed.
SECOND_CLUSTER = "prod-eu"
#: A configured cluster that has written nothing yet.
QUIET_CLUSTER = "staging"
#: prod-eu's groups: orders-app (ERR: the cluster cannot be read) shares its id with test-cluster's.
SECOND_GROUPS = {"orders-app": "ERR", "payments-app": "OK"}


def add_second_cluster(lake: KnownLake) -> None:
    """Rows of prod-eu beside test-cluster's (same group id, other statuses), and a config of
    three [[clusters]]: test-cluster (with its JMX target), prod-eu and staging (none)."""
    from harness import lake_rows

    lake_dir = lake.root / "lake"
    ts = (lake.now - dt.timedelta(minutes=1)).timestamp()
    for group, status in SECOND_GROUPS.items():
        values = {"total_lag": None} if status == "ERR" else {"total_lag": 12, "partitions": 1}
        lake_rows.group_status(lake_dir, ts, group, status, cluster=SECOND_CLUSTER, **values)
    lake_rows.metric(lake_dir, ts, "up", 0.0, cluster=SECOND_CLUSTER, source="admin")
    lake_rows.metric(lake_dir, ts, "up", 1.0, cluster=SECOND_CLUSTER, broker="7")
    lakelib.write_views_file(lake_dir, lake.root / "lagwatch.duckdb")
    text = lake.config_path.read_text()
    text = text.replace(
        f'[cluster]\nname = "{CLUSTER}"\nbootstrap_servers = "127.0.0.1:9"\n',
        f'[[clusters]]\nname = "{CLUSTER}"\nbootstrap_servers = "127.0.0.1:9"\n'
        '[[clusters.jmx.targets]]\nbroker = "1"\nhost = "127.0.0.1"\nport = 9999\n\n'
        f'[[clusters]]\nname = "{SECOND_CLUSTER}"\nbootstrap_servers = "127.0.0.1:19"\n\n'
        f'[[clusters]]\nname = "{QUIET_CLUSTER}"\nbootstrap_servers = "127.0.0.1:29"\n',
    )
    text = text.replace('[[jmx.targets]]\nbroker = "1"\nhost = "127.0.0.1"\nport = 9999\n', "")
    assert text.count("[[clusters]]") == 3 and "[[jmx.targets]]" not in text, text
    lake.config_path.write_text(text)


@pytest.fixture
def two_clusters(known_lake: KnownLake) -> KnownLake:
    """The known lake with prod-eu's rows beside it, configured as [[clusters]] (with staging)."""
    add_second_cluster(known_lake)
    return known_lake


@pytest.fixture
def known_lake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> KnownLake:
    """The lake above, with $LAGWATCH_CONFIG pointing the dashboard at it."""
    built = build_known_lake(tmp_path)
    monkeypatch.setenv("LAGWATCH_CONFIG", str(built.config_path))
    return built


@pytest.fixture
def dashboard_url(known_lake: KnownLake, tmp_path: Path) -> Iterator[str]:
    """`lagwatch dashboard` over the known lake until the test ends; its URL."""
    from tests.dashboard.test_browser import serving_dashboard  # imported here: test_browser imports this module

    with serving_dashboard(known_lake, tmp_path / "dashboard.log") as url:
        yield url


@pytest.fixture
def chromium() -> Iterator[Any]:
    """A headless chromium (the Debian package) for the test, closed after it."""
    from harness.browser import chromium as launched

    with launched() as browser:
        yield browser


@pytest.fixture
def empty_lake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A lake with its folders but no data: every page must say how to fill it."""
    config_path = tmp_path / "config.toml"
    config_path.write_text(
        f'[cluster]\nname = "{CLUSTER}"\n[lake]\npath = "{(tmp_path / "lake").as_posix()}"\n'
        f'duckdb_path = "{(tmp_path / "lagwatch.duckdb").as_posix()}"\n'
    )
    monkeypatch.setenv("LAGWATCH_CONFIG", str(config_path))
    return config_path
