"""`lagwatch api` answer time for 2,000 groups × 20 partitions read from the lake (bar: p95 ≤ 100 ms).

The lake holds the last 11 minutes of 1-minute `lag_1m` windows for 2,000 groups, each
consuming one of 100 topics × 20 partitions (40,000 group-partitions, 440,000 rows), a
`group_status` row per group per minute, the topics' log end offsets in `metrics_1m` and Spark
progress, written through `lagwatch.lake.write_rows` and anchored to the current minute.

`lagwatch api` runs as its own process (the default `cache_s`, `max_series` raised so every
series is exported: the heaviest answer). Requests go over one keep-alive connection per
endpoint class for `DURATION_S`, so several cache refreshes (a lake read and a /metrics render
in the API's background thread) happen while requests are timed; their cost is in the p95.
`/metrics` is asked with `Accept-Encoding: gzip`, as Prometheus asks; the plain text is stated.

A second `lagwatch api` then serves the same lake with the default `max_series`, as an operator
runs it: its /metrics p95 is judged against the fleet bar (≤ 1 s), and the note says how many
series the cap kept and dropped and how big the answer is. LAGWATCH_BENCH_API_GROUPS and
LAGWATCH_BENCH_API_PARTITIONS set the lake's size (a fleet: 20,000 groups × 10 partitions).
"""

from __future__ import annotations

import datetime as dt
import http.client
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

from bench.common import Result
from lagwatch import lake as lakelib
from lagwatch.config.api import ApiConfig
from lagwatch.vocabulary import Source
from shell.broker import free_port

GROUPS = int(os.environ.get("LAGWATCH_BENCH_API_GROUPS", "2000"))
TOPICS = 100
PARTITIONS = int(os.environ.get("LAGWATCH_BENCH_API_PARTITIONS", "20"))
MINUTES = 11
CLUSTER = "bench"
BAR_MS = 100.0
#: /metrics under the default series cap at fleet size (20,000 groups): one scrape well inside a 15 s interval.
CAPPED_BAR_MS = 1000.0
DEFAULT_MAX_SERIES: int = ApiConfig.model_fields["max_series"].default
DURATION_S = 20.0
ROOT = Path(__file__).resolve().parents[1]


def _lag_rows(now: dt.datetime) -> pa.Table:
    """Every (group, partition, minute) row, vectorised; lag grows for a tenth of the groups."""
    t0 = now.replace(second=0, microsecond=0) - dt.timedelta(minutes=MINUTES - 1)
    n = GROUPS * PARTITIONS * MINUTES
    idx = np.arange(n)
    minute = idx % MINUTES
    partition = (idx // MINUTES) % PARTITIONS
    group = idx // (MINUTES * PARTITIONS)
    starts = np.datetime64(t0.replace(tzinfo=None), "us") + minute.astype("timedelta64[m]")
    committed = 1_000_000 + minute * 600 + partition
    lag = np.where(group % 10 == 0, 100 * (minute + 1), partition % 3)
    status = np.where(group % 10 == 0, "WARN", "OK")
    columns = {
        "cluster": pa.array(np.full(n, CLUSTER)),
        "window_start": pa.array(starts, pa.timestamp("us", tz="UTC")),
        "window_end": pa.array(starts + np.timedelta64(1, "m"), pa.timestamp("us", tz="UTC")),
        "group_id": pa.array(np.char.add("group-", group.astype(str))),
        "topic": pa.array(np.char.add("topic-", (group % TOPICS).astype(str))),
        "partition": pa.array(partition.astype(np.int32)),
        "committed_offset": pa.array(committed),
        "end_offset": pa.array(committed + lag),
        "lag": pa.array(lag.astype(np.int64)),
        "lag_max": pa.array(lag.astype(np.int64)),
        "consume_rate": pa.array(np.full(n, 10.0)),
        "produce_rate": pa.array(np.full(n, 10.0)),
        "time_lag_s": pa.array(lag / 10.0),
        "time_lag_method": pa.array(np.full(n, "interpolated")),
        "eta_s": pa.array(np.full(n, None, dtype=object), pa.float64()),
        "status": pa.array(status),
        "reason": pa.array(np.where(group % 10 == 0, "WARN: lag rising", "")),
        "rule": pa.array(np.where(group % 10 == 0, "lag_rising", "ok")),
        "version": pa.array(np.ones(n, np.int64)),
    }
    for field in lakelib.arrow_schema("lag_1m"):  # columns this bench does not model (owners, margins): NULL
        columns.setdefault(field.name, pa.nulls(n, field.type))
    return pa.table(columns)


def build_lake(root: Path, now: dt.datetime) -> int:
    lakelib.ensure_lake(root)
    lag = _lag_rows(now)
    lakelib.write_rows(root, "lag_1m", lag, "bench")
    t = now.replace(second=0, microsecond=0)
    groups = [
        {"cluster": CLUSTER, "group_id": f"group-{g}", "status": "WARN" if g % 10 == 0 else "OK", "reason": "",
         "rule": "lag_rising" if g % 10 == 0 else "ok", "total_lag": 0, "max_lag": 0, "max_time_lag_s": None,
         "partitions": PARTITIONS, "topics": f"topic-{g % TOPICS}", "window_start": t, "updated_at": now, "version": 1}
        for g in range(GROUPS)
    ]  # fmt: skip
    lakelib.write_rows(root, "group_status", lakelib.rows_to_arrow("group_status", groups), "bench")
    ends = [
        {"cluster": CLUSTER, "window_start": t, "window_end": t + dt.timedelta(minutes=1), "source": Source.ADMIN,
         "metric": "log_end_offset", "kind": "counter", "topic": f"topic-{tp}", "partition": p, "samples": 4,
         "last": 2_000_000.0, "first": 1_999_000.0, "version": 1}
        for tp in range(TOPICS) for p in range(PARTITIONS)
    ]  # fmt: skip
    lakelib.write_rows(root, "metrics_1m", lakelib.rows_to_arrow("metrics_1m", ends), "bench")
    progress = [{"cluster": CLUSTER, "query": "rollups", "batch_id": 1, "ts": now, "freshness_s": 2.0, "version": 1}]
    lakelib.write_rows(root, "pipeline_progress", lakelib.rows_to_arrow("pipeline_progress", progress), "bench")
    return lag.num_rows


def _start_api(folder: Path, lake: Path, max_series: int | None = 1_000_000) -> tuple[subprocess.Popen[bytes], int]:
    """`lagwatch api` over `lake`; max_series None leaves the default (each run its own config, state and log)."""
    port = free_port()
    tag = "default" if max_series is None else str(max_series)
    config = folder / f"config-{tag}.toml"
    cap = "" if max_series is None else f"max_series = {max_series}\n"
    config.write_text(
        f'[cluster]\nname = "{CLUSTER}"\nbootstrap_servers = "127.0.0.1:9"\n'
        f'[lake]\npath = "{lake}"\nduckdb_path = "{folder / f"lagwatch-{tag}.duckdb"}"\n'
        f"[api]\nport = {port}\n{cap}"
    )
    log = open(folder / f"api-{tag}.log", "wb")  # noqa: SIM115 - handed to the child
    process = subprocess.Popen(
        [sys.executable, "-m", "shell.cli", "--config", str(config), "api"], cwd=ROOT, stdout=log, stderr=log
    )
    log.close()
    return process, port


def _get(conn: http.client.HTTPConnection, path: str, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    conn.request("GET", path, headers=headers or {})
    response = conn.getresponse()
    return response.status, response.read()


def _wait_snapshot(port: int, timeout_s: float = 180) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
            if _get(conn, "/v3/kafka")[0] == 200:
                conn.close()
                return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError("lagwatch api did not answer")


def _p95(samples: list[float]) -> float:
    return statistics.quantiles(samples, n=20)[-1] if len(samples) >= 20 else max(samples)


def _time_requests(port: int, paths: list[str], headers: dict[str, str] | None, duration_s: float) -> list[float]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    times: list[float] = []
    deadline = time.monotonic() + duration_s
    i = 0
    while time.monotonic() < deadline:
        started = time.perf_counter()
        status, _ = _get(conn, paths[i % len(paths)], headers)
        times.append((time.perf_counter() - started) * 1000)
        assert status == 200, (paths[i % len(paths)], status)
        i += 1
    conn.close()
    return times


def _metric_value(text: str, name: str) -> float:
    line = next(line for line in text.splitlines() if line.startswith(name + " "))
    return float(line.split()[-1])


def _refresh_cost(lake: Path, folder: Path) -> tuple[float, float, float]:
    """(lake read, /metrics render, render under the default cap) in ms for one refresh, in this process."""
    from api.exposition import render
    from api.snapshot import ReadWindow, read_snapshot

    window = ReadWindow(lakelib.utc_now(), dt.timedelta(minutes=10), dt.timedelta(minutes=10), lakelib.utc_now())
    snap = read_snapshot(lake, folder / "refresh.duckdb", window, [CLUSTER])
    started = time.perf_counter()
    render(snap, 1_000_000, {})
    render_ms = (time.perf_counter() - started) * 1000
    started = time.perf_counter()
    render(snap, DEFAULT_MAX_SERIES, {})
    return snap.read_seconds * 1000, render_ms, (time.perf_counter() - started) * 1000


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(15)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _dropped(text: str) -> dict[str, int]:
    """This render's `lagwatch_api_series_dropped{level}` by level."""
    prefix = 'lagwatch_api_series_dropped{level="'
    lines = [line for line in text.splitlines() if line.startswith(prefix)]
    return {line[len(prefix) :].split('"')[0]: int(float(line.split()[-1])) for line in lines}


def _measure_default_cap(folder: Path, scale: str, render_ms: float) -> Result:
    """/metrics p95 of a `lagwatch api` with the default max_series; the note: what the cap kept, its size."""
    process, port = _start_api(folder, folder / "lake", None)
    try:
        _wait_snapshot(port)
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        plain = _get(conn, "/metrics")[1]
        zipped = _get(conn, "/metrics", {"Accept-Encoding": "gzip"})[1]
        conn.close()
        times = _time_requests(port, ["/metrics"], {"Accept-Encoding": "gzip"}, DURATION_S / 2)
    finally:
        _stop(process)
    text = plain.decode()
    series = _metric_value(text, "lagwatch_api_series_exported")
    dropped = _dropped(text)
    levels = ", ".join(f"{level} {count:,}" for level, count in dropped.items() if count)
    note = (
        f"{len(times)} requests over {DURATION_S / 2:.0f} s; {scale}; max_series {DEFAULT_MAX_SERIES:,}: "
        f"{series:,.0f} series exported, {sum(dropped.values()):,} dropped ({levels or 'none'}); "
        f"{len(plain) / 1e6:.1f} MB plain, {len(zipped) / 1e6:.2f} MB gzip; render per refresh {render_ms:,.0f} ms"
    )
    return Result("/metrics p95 (gzip, default max_series)", _p95(times), "ms", CAPPED_BAR_MS, "max", note)


def run() -> list[Result]:
    folder = Path(tempfile.mkdtemp(prefix="bench-api-"))
    process = None
    try:
        rows = build_lake(folder / "lake", lakelib.utc_now())
        process, port = _start_api(folder, folder / "lake")
        _wait_snapshot(port)
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        plain = _get(conn, "/metrics")[1]
        conn.close()
        text = plain.decode()
        groups = random.Random(7).sample(range(GROUPS), 200)
        lag_paths = [f"/v3/kafka/{CLUSTER}/consumer/group-{g}/lag" for g in groups]
        status_paths = [f"/v3/kafka/{CLUSTER}/consumer/group-{g}/status" for g in groups]
        list_paths = [
            f"/v3/kafka/{CLUSTER}/consumer",
            f"/v3/kafka/{CLUSTER}/topic",
            f"/v3/kafka/{CLUSTER}/topic/topic-7",
        ]
        gzip_headers = {"Accept-Encoding": "gzip"}
        metrics_gzip = _time_requests(port, ["/metrics"], gzip_headers, DURATION_S)
        metrics_plain = _time_requests(port, ["/metrics"], None, DURATION_S / 2)
        lag = _time_requests(port, lag_paths, None, DURATION_S)
        status = _time_requests(port, status_paths, None, DURATION_S / 2)
        lists = _time_requests(port, list_paths, None, DURATION_S / 2)
        _stop(process)
        process = None
        series = _metric_value(text, "lagwatch_api_series_exported")
        scale = f"{GROUPS:,} groups × {PARTITIONS} partitions, {rows:,} lag_1m rows"
        read_ms, render_ms, capped_render_ms = _refresh_cost(folder / "lake", folder)
        capped = _measure_default_cap(folder, scale, capped_render_ms)
        return [
            Result("/metrics p95 (gzip, as Prometheus asks)", _p95(metrics_gzip), "ms", BAR_MS, "max",
                   f"{len(metrics_gzip)} requests over {DURATION_S:.0f} s; {scale}; {series:,.0f} series"),
            Result("/v3/kafka/{cluster}/consumer/{group}/lag p95", _p95(lag), "ms", BAR_MS, "max",
                   f"{len(lag)} requests, 200 groups in turn, {PARTITIONS} partitions each"),
            Result("/v3/.../status p95", _p95(status), "ms", BAR_MS, "max", f"{len(status)} requests"),
            Result("/v3 consumer list, topic list, topic detail p95", _p95(lists), "ms", BAR_MS, "max",
                   f"{len(lists)} requests ({GROUPS:,}-name consumer list)"),
            Result("/metrics p95 (plain text)", _p95(metrics_plain), "ms", None, "max",
                   f"{len(metrics_plain)} requests, {len(plain) / 1e6:.1f} MB each"),
            Result("lake read per cache refresh (background thread)", read_ms, "ms", None, "max",
                   "DuckDB over the views: newest rows, commit-window start, groups, offsets"),
            Result("/metrics render per cache refresh (background thread)", render_ms, "ms", None, "max",
                   f"{series:,.0f} series formatted once, then served to every scrape"),
            capped,
        ]  # fmt: skip
    finally:
        if process is not None:
            _stop(process)
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    for result in run():
        print(f"{result.name}: {result.figure:.1f} {result.unit} ({result.verdict}) {result.note}")
