"""A known lake for the API, and `lagwatch api` running over it as its own process.

Rows are written with the lake's own writer (`lagwatch.lake.write_rows`), exactly as the
Spark job writes them, so the API reads real Parquet files through the real views. Times are
anchored to the current minute. Tests derive expected values from `KnownLake.rows`.
"""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from harness.processes import start_lagwatch
from lagwatch import lake as lakelib
from shell.broker import free_port

CLUSTER = "test-cluster"
COMMIT_WINDOW_MINUTES = 5


@dataclass
class KnownLake:
    root: Path
    now: dt.datetime
    rows: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def newest_lag(self) -> dict[tuple[str, str, int], dict[str, Any]]:
        """(group, topic, partition) -> the newest lag_1m row (what the API calls current)."""
        best: dict[tuple[str, str, int], dict[str, Any]] = {}
        for row in self.rows["lag_1m"]:
            key = (row["group_id"], row["topic"], row["partition"])
            if key not in best or row["window_start"] > best[key]["window_start"]:
                best[key] = row
        return best


def lag_row(t: dt.datetime, group: str, topic: str, partition: int, committed: int, lag: int, **extra: Any) -> dict:
    row = {
        "cluster": CLUSTER,
        "window_start": t,
        "window_end": t + dt.timedelta(minutes=1),
        "group_id": group,
        "topic": topic,
        "partition": partition,
        "committed_offset": committed,
        "end_offset": committed + lag,
        "lag": lag,
        "lag_max": lag,
        "consume_rate": 1.0,
        "produce_rate": 1.0,
        "time_lag_s": None,
        "time_lag_method": "unknown",
        "eta_s": None,
        "status": "OK",
        "reason": "",
        "rule": "ok",
        "version": 1,
    }
    row.update(extra)
    return row


def write_lake(root: Path, rows: dict[str, list[dict[str, Any]]]) -> None:
    lakelib.ensure_lake(root)
    for table, table_rows in rows.items():
        if table_rows:
            lakelib.write_rows(root, table, lakelib.rows_to_arrow(table, table_rows), "known")


def _known_rows(now: dt.datetime) -> dict[str, list[dict[str, Any]]]:
    t = now.replace(second=0, microsecond=0)
    minutes = [t - dt.timedelta(minutes=m) for m in range(COMMIT_WINDOW_MINUTES, -1, -1)]  # oldest first
    lag: list[dict[str, Any]] = []
    # healthy: caught up on both partitions of orders.
    for i, ts in enumerate(minutes):
        for p in (0, 1):
            lag.append(
                lag_row(
                    ts,
                    "healthy",
                    "orders",
                    p,
                    1000 + 100 * i,
                    0,
                    time_lag_s=0.0,
                    time_lag_method="caught_up",
                    rule="caught_up",
                )
            )
    # slow: lag rising on orders/0 (WARN), orders/1 fine, payments/0 stalled, only the last 3 minutes seen.
    for i, ts in enumerate(minutes):
        lag.append(
            lag_row(
                ts,
                "slow",
                "orders",
                0,
                500 + 10 * i,
                50 * (i + 1),
                time_lag_s=12.5 * (i + 1),
                time_lag_method="interpolated",
                status="WARN",
                rule="lag_rising",
                reason="WARN: lag rising",
            )
        )
        lag.append(lag_row(ts, "slow", "orders", 1, 900 + 10 * i, 3, time_lag_s=1.5, time_lag_method="interpolated"))
    for ts in minutes[-3:]:
        lag.append(
            lag_row(
                ts,
                "slow",
                "payments",
                0,
                70,
                40,
                time_lag_s=90.0,
                time_lag_method="interpolated",
                status="STALL",
                rule="stall",
                reason="STALL: offset not moving",
            )
        )
    # stopped: STOP on one partition; the newest row replaces an older version of the same window.
    for ts in minutes:
        lag.append(lag_row(ts, "stopped", "payments", 1, 10, 400, status="STOP", rule="stop", reason="STOP: no commit"))
    lag.append(lag_row(minutes[-1], "stopped", "payments", 1, 10, 390, status="STOP", rule="stop", version=0))
    groups = [
        {
            "cluster": CLUSTER,
            "group_id": g,
            "status": s,
            "reason": r,
            "rule": rule,
            "total_lag": tl,
            "max_lag": ml,
            "max_time_lag_s": None,
            "partitions": n,
            "topics": topics,
            "group_type": group_type,
            "window_start": t,
            "updated_at": now - dt.timedelta(seconds=5),
            "version": 1,
        }
        for g, s, r, rule, tl, ml, n, topics, group_type in (
            ("healthy", "OK", "", "caught_up", 0, 0, 2, "orders", "classic"),
            ("slow", "STALL", "STALL: offset not moving", "stall", 343, 300, 3, "orders,payments", "consumer"),
            ("stopped", "STOP", "STOP: no commit", "stop", 400, 400, 1, "payments", None),
        )
    ]
    metrics = []
    for topic, partition, end in (
        ("orders", 0, 1600),
        ("orders", 1, 1503),
        ("payments", 0, 110),
        ("payments", 1, 410),
        ("audit", 2, 7),
    ):
        metrics.append(
            {
                "cluster": CLUSTER,
                "window_start": t,
                "window_end": t + dt.timedelta(minutes=1),
                "source": "admin",
                "metric": "log_end_offset",
                "kind": "counter",
                "topic": topic,
                "partition": partition,
                "samples": 4,
                "min": end,
                "max": end,
                "avg": end,
                "first": end,
                "last": end,
                "rate_per_s": 0.5,
                "version": 1,
            }
        )
    for broker, up in (("1", 1.0), ("2", 0.0)):
        metrics.append(
            {
                "cluster": CLUSTER,
                "window_start": t,
                "window_end": t + dt.timedelta(minutes=1),
                "source": "jmx",
                "metric": "up",
                "kind": "gauge",
                "broker": broker,
                "samples": 4,
                "min": up,
                "max": up,
                "avg": up,
                "first": up,
                "last": up,
                "rate_per_s": None,
                "version": 1,
            }
        )
    metrics.append(
        {
            "cluster": CLUSTER,
            "window_start": t,
            "window_end": t + dt.timedelta(minutes=1),
            "source": "heartbeat",
            "metric": "collector_samples_produced_total",
            "kind": "counter",
            "client_id": "collector-a",
            "samples": 4,
            "min": 1,
            "max": 9,
            "avg": 5,
            "first": 1,
            "last": 9,
            "rate_per_s": 1.0,
            "version": 1,
        }
    )
    progress = [
        {
            "cluster": CLUSTER,
            "query": "rollups",
            "batch_id": b,
            "ts": now - dt.timedelta(seconds=20 - b),
            "input_rows": 10,
            "input_rows_per_s": 5.0,
            "processed_rows_per_s": 6.0,
            "batch_duration_ms": 300,
            "watermark": now,
            "freshness_s": 2.5 + b,
            "version": b,
        }
        for b in range(3)
    ]
    return {"lag_1m": lag, "group_status": groups, "metrics_1m": metrics, "pipeline_progress": progress}


@pytest.fixture(scope="module")
def known_lake(tmp_path_factory: pytest.TempPathFactory) -> KnownLake:
    now = lakelib.utc_now()
    rows = _known_rows(now)
    root = tmp_path_factory.mktemp("known") / "lake"
    write_lake(root, rows)
    return KnownLake(root, now, rows)


def stop_process(process: subprocess.Popen[bytes], timeout_s: float = 15) -> None:
    """SIGTERM, then SIGKILL if it has not exited within `timeout_s`."""
    process.terminate()
    try:
        process.wait(timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@dataclass
class RunningApi:
    url: str
    process: subprocess.Popen[bytes]
    log: Path

    def get(self, path: str, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
        request = urllib.request.Request(self.url + path, headers=headers or {})
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, {k.lower(): v for k, v in response.headers.items()}, response.read()
        except urllib.error.HTTPError as exc:
            return exc.code, {k.lower(): v for k, v in exc.headers.items()}, exc.read()

    def json(self, path: str) -> tuple[int, Any]:
        code, _, body = self.get(path)
        return code, json.loads(body)

    def stop(self) -> None:
        stop_process(self.process)


def write_config(folder: Path, lake: Path, port: int, **api: Any) -> Path:
    settings = {"port": port, "cache_s": 1, **api}
    api_lines = "\n".join(f"{k} = {json.dumps(v)}" for k, v in settings.items())
    text = f"""
[cluster]
name = "{CLUSTER}"
bootstrap_servers = "127.0.0.1:9"
[lake]
path = "{lake}"
duckdb_path = "{folder / "lagwatch.duckdb"}"
[lag]
window_s = {COMMIT_WINDOW_MINUTES * 60}
[api]
{api_lines}
"""
    path = folder / "config.toml"
    path.write_text(text)
    return path


def wait_answering(api: RunningApi, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if api.process.poll() is not None:
            raise RuntimeError(f"lagwatch api exited {api.process.returncode}: {api.log.read_text()[-3000:]}")
        try:
            if api.get("/healthz")[0] == 200:
                return
        except OSError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"lagwatch api not answering after {timeout_s} s: {api.log.read_text()[-3000:]}")


def launch_api(folder: Path, lake: Path, **api: Any) -> RunningApi:
    """`lagwatch api` over `lake` on a free loopback port, as its own process, answering."""
    folder.mkdir(parents=True, exist_ok=True)
    port = free_port()
    config = write_config(folder, lake, port, **api)
    log = folder / "api.log"
    running = RunningApi(f"http://127.0.0.1:{port}", start_lagwatch(config, log, "api"), log)
    try:
        wait_answering(running)
    except RuntimeError:
        running.stop()
        raise
    return running


@pytest.fixture
def start_api(tmp_path: Path) -> Iterator[Callable[..., RunningApi]]:
    """Factory: `start_api(lake_root, **api_settings)`; every API started is stopped after the test."""
    running: list[RunningApi] = []

    def start(lake: Path, **api: Any) -> RunningApi:
        running.append(launch_api(tmp_path / f"api-{len(running)}", lake, **api))
        return running[-1]

    yield start
    for api in running:
        api.stop()


@pytest.fixture(scope="module")
def api(known_lake: KnownLake) -> Iterator[RunningApi]:
    """One `lagwatch api` over the known lake for a whole test module."""
    running = launch_api(known_lake.root.parent / "api", known_lake.root)
    yield running
    running.stop()
