"""Alert engine: evaluation time of 500 rules over a 7-day lake; notifications/s through the outbox.

The lake (cached under bench/.data/alerts/<size>/, regenerated when missing): 7 days of 1-minute
windows of 8 broker metrics for 5 brokers (403k rows), lag_1m for 200 groups × 10 partitions
(20.2M rows), group_status for 200 groups every minute (2M rows) and pipeline progress. DuckDB
generates each day in slices of a few million rows (memory stays bounded at fleet size) and
the rows go through `lagwatch.lake.write_rows`.

LAGWATCH_BENCH_ALERTS_GROUPS sets the number of groups (default 200). A fleet's lag_1m over
7 days does not fit this machine (20,000 groups × 10 partitions is 2 billion rows), so
LAGWATCH_BENCH_ALERTS_PARTITION_DAYS (default 7) lets lag_1m cover only the newest days while
the other tables keep 7. Each size has its own cached lake, so sizes never mix.

Bar for evaluation: ≤ 5 s for 500 rules, a third of the default 15 s `evaluate_every_s`, so a
cycle leaves room for delivery on 2 shared cores. Notifications/s is stated: 4,000
notifications (400 incidents × 10) delivered through the persisted outbox to a local HTTP
receiver, with their `delivered` events written to the lake.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING

from bench.common import Result, minute_slices
from lagwatch.config import Config, parse_config
from lagwatch.lake import arrow_schema, ensure_lake, write_rows

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa

DAYS = 7
BROKERS = 5
GROUPS = int(os.environ.get("LAGWATCH_BENCH_ALERTS_GROUPS", "200"))
PARTITIONS = 10
#: Days of lag_1m (the newest ones); the other tables always cover DAYS.
PARTITION_DAYS = min(DAYS, int(os.environ.get("LAGWATCH_BENCH_ALERTS_PARTITION_DAYS", str(DAYS))))
DATA = (
    Path(__file__).resolve().parent
    / ".data"
    / "alerts"
    / f"groups-{GROUPS}-partitions-{PARTITIONS}-days-{PARTITION_DAYS}"
)
METRICS = (
    "under_replicated_partitions",
    "offline_partitions",
    "active_controller_count",
    "up",
    "leader_count",
    "partition_count",
    "messages_in_total",
    "leader_elections_total",
)
RULES = 500


def _progress(message: str) -> None:
    print(f"bench_alerts: {message}", file=sys.stderr, flush=True)


def _slice_sql(table: str, start: dt.datetime, end: dt.datetime) -> str:
    minutes = f"range(TIMESTAMPTZ '{start.isoformat()}', TIMESTAMPTZ '{end.isoformat()}', INTERVAL 1 MINUTE) m(ws)"
    if table == "metrics_1m":
        names = ", ".join(f"'{m}'" for m in METRICS)
        return (
            f"SELECT 'bench' cluster, ws window_start, ws + INTERVAL 1 MINUTE window_end, 'jmx' source, metric, "
            f"'gauge' kind, b::VARCHAR broker, NULL topic, NULL::INTEGER partition, NULL group_id, NULL client_id, "
            f"6::BIGINT samples, v min, v max, v avg, v first, v last, NULL::DOUBLE rate_per_s, 1::BIGINT version "
            f"FROM (SELECT ws, metric, b, CASE metric WHEN 'up' THEN 1.0 WHEN 'active_controller_count' "
            f"THEN (b = 1)::INT ELSE (hash(ws, metric, b) % 100)::DOUBLE END v "
            f"FROM {minutes}, unnest([{names}]) t(metric), range(1, {BROKERS + 1}) r(b))"
        )
    if table == "lag_1m":
        return (
            f"SELECT 'bench' cluster, ws window_start, ws + INTERVAL 1 MINUTE window_end, 'g' || g group_id, "
            f"'topic-' || (g % 20) topic, p::INTEGER partition, o committed_offset, o + l end_offset, l lag, "
            f"l lag_max, "
            f"50.0 consume_rate, 50.0 produce_rate, l / 50.0 time_lag_s, 'interpolated' time_lag_method, "
            f"NULL::DOUBLE eta_s, CASE WHEN l > 900 THEN 'WARN' ELSE 'OK' END status, 'bench' reason, "
            f"1::BIGINT version "
            f"FROM (SELECT ws, g, p, epoch(ws)::BIGINT * 50 o, (hash(ws, g, p) % 1000)::BIGINT l "
            f"FROM {minutes}, range({GROUPS}) r(g), range({PARTITIONS}) q(p))"
        )
    if table == "group_status":
        return (
            f"SELECT 'bench' cluster, 'g' || g group_id, CASE WHEN g % 50 = 0 THEN 'STALL' ELSE 'OK' END status, "
            f"'bench' reason, 'burrow' rule, (hash(ws, g) % 10000)::BIGINT total_lag, 999::BIGINT max_lag, "
            f"(hash(ws, g) % 600)::DOUBLE max_time_lag_s, {PARTITIONS} partitions, 'topic' topics, "
            f"ws window_start, ws updated_at, 1::BIGINT version FROM {minutes}, range({GROUPS}) r(g)"
        )
    return (
        f"SELECT 'bench' cluster, 'samples' query, epoch(ws)::BIGINT batch_id, ws ts, 1000::BIGINT input_rows, "
        f"100.0 input_rows_per_s, 100.0 processed_rows_per_s, 500::BIGINT batch_duration_ms, ws watermark, "
        f"3.0 freshness_s, 1::BIGINT version FROM {minutes}"
    )


def with_all_columns(table: str, data: pa.Table) -> pa.Table:
    """Columns other parts add to the contract (beside the fixed ones) are NULL in bench rows."""
    import pyarrow as pa

    for column in arrow_schema(table):
        if column.name not in data.column_names:
            data = data.append_column(column.name, pa.nulls(data.num_rows, column.type))
    return data


def _rows_per_minute(table: str) -> int:
    return {"metrics_1m": len(METRICS) * BROKERS, "lag_1m": GROUPS * PARTITIONS, "group_status": GROUPS}.get(table, 1)


def _write_day(con: duckdb.DuckDBPyConnection, lake: Path, table: str, day: dt.datetime) -> None:
    """One table's day, written in slices of whole minutes of at most about SLICE_ROWS rows each."""
    slices = minute_slices(day, day + dt.timedelta(days=1), _rows_per_minute(table))
    for start, end in slices:
        data = with_all_columns(table, con.sql(_slice_sql(table, start, end)).to_arrow_table())
        stem = f"bench-{day:%Y%m%d}" if len(slices) == 1 else f"bench-{start:%Y%m%d-%H%M}"
        write_rows(lake, table, data, stem)


def build_lake() -> float:
    """Generate the 7-day lake once per size; return the `now` it ends at (epoch seconds)."""
    import duckdb

    lake = DATA / "lake"
    meta = DATA / "meta.json"
    if meta.exists():
        return float(json.loads(meta.read_text())["now"])
    ensure_lake(lake)
    end = dt.datetime.now(dt.UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    con.execute("SET enable_progress_bar = false")  # a fleet's slices take seconds each: no bar per slice
    for offset in range(DAYS, 0, -1):
        day = end - dt.timedelta(days=offset)
        for table in ("metrics_1m", "lag_1m", "group_status", "pipeline_progress"):
            if table != "lag_1m" or offset <= PARTITION_DAYS:
                _write_day(con, lake, table, day)
        _progress(f"generated {day:%Y-%m-%d}")
    now = end.timestamp() - 1
    meta.write_text(json.dumps({"now": now}))
    return now


def bench_rules() -> list[dict[str, object]]:
    """500 rules of every kind, spread over the tables and groups."""
    rules: list[dict[str, object]] = []
    for i in range(200):
        rules.append({"name": f"lag-{i}", "metric": "lag", "by": ["group_id", "topic"], "threshold": 950 + i / 4})
    for i in range(100):
        level = ("WARN", "STALL", "STOP")[i % 3]
        rules.append({"name": f"status-{i}", "kind": "status", "metric": "status", "by": ["group_id"], "level": level})
    for i in range(100):
        rules.append({"name": f"metric-{i}", "metric": METRICS[i % len(METRICS)], "by": ["broker"], "threshold": i})
    for i in range(50):
        rules.append({"name": f"rate-{i}", "kind": "rate", "metric": "end_offset", "by": ["group_id"], "threshold": i})
    for i in range(50):
        rules.append({"name": f"absent-{i}", "kind": "absence", "metric": METRICS[i % len(METRICS)],
                      "table": "metrics_1m", "by": ["broker"], "for": "2m"})  # fmt: skip
    assert len(rules) == RULES
    return rules


def _config(state_dir: Path, lake: Path, **alerts: object) -> Config:
    return parse_config(
        {
            "cluster": {"name": "bench"},
            "lake": {"path": str(lake), "duckdb_path": str(state_dir / "lagwatch.duckdb")},
            "alerts": {"state_dir": str(state_dir), "use_default_rules": False, **alerts},
        },
        environ={},
    )


def measure_evaluation(now: float) -> list[Result]:
    from alerts.evaluate import Evaluator
    from alerts.rules import compile_rules

    with tempfile.TemporaryDirectory() as tmp:
        config = _config(Path(tmp), DATA / "lake", rules=bench_rules())
        evaluator = Evaluator(config, compile_rules(config.alerts))
        started = time.perf_counter()
        conditions = evaluator.evaluate(now)
        cold = time.perf_counter() - started
        warm = []
        for _ in range(3):
            started = time.perf_counter()
            evaluator.evaluate(now)
            warm.append(time.perf_counter() - started)
        evaluator.close()
    if not conditions:
        raise RuntimeError("no rule matched the benchmark lake: the measurement would be meaningless")
    lag_rows = GROUPS * PARTITIONS * 24 * 60 * PARTITION_DAYS
    note = (
        f"{len(conditions)} alert conditions true; {GROUPS:,} groups × {PARTITIONS} partitions; "
        f"lag_1m {lag_rows / 1e6:,.1f}M rows, {PARTITION_DAYS} of {DAYS} days; group_status {DAYS} days"
    )
    return [
        Result("evaluate 500 rules, 7-day lake (steady)", statistics.median(warm), "s", 5.0, "max", note),
        Result(
            "evaluate 500 rules, 7-day lake (first cycle)",
            cold,
            "s",
            5.0,
            "max",
            "a new engine's first cycle (connection, views, snapshot tables)",
        ),
    ]


class _CountingHandler(BaseHTTPRequestHandler):
    count = 0
    lock = threading.Lock()

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        with _CountingHandler.lock:
            _CountingHandler.count += 1
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        return


def measure_outbox(incidents: int = 400, per_incident: int = 10) -> Result:
    from alerts.events import EventLog
    from alerts.outbox import Outbox, enqueue
    from alerts.store import Store

    server = ThreadingHTTPServer(("127.0.0.1", 0), _CountingHandler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/hook"
    with tempfile.TemporaryDirectory() as tmp:
        state = Path(tmp) / "state"
        config = _config(state, Path(tmp) / "lake", receivers=[{"name": "ops", "url": url}])
        store = Store(state)
        outbox = Outbox(config, store, EventLog(config, store), sender="bench")
        body = json.dumps({"version": "4", "status": "firing", "alerts": [{"labels": {"x": "y" * 200}}]}).encode()
        with store.transaction() as db:
            for i in range(incidents):
                for seq in range(1, per_incident + 1):
                    labels = {"alertname": "Bench", "incident": str(i)}
                    enqueue(db, incident_key=f"inc-{i}", seq=seq, receiver="ops", kind="firing", labels=labels,
                            body=body, now=time.time())  # fmt: skip
        total = incidents * per_incident
        started = time.perf_counter()
        while outbox.pending_count():
            outbox.deliver_due(budget_s=60)
        elapsed = time.perf_counter() - started
        outbox.close()
        store.close()
    server.shutdown()
    if _CountingHandler.count != total:
        raise RuntimeError(f"receiver counted {_CountingHandler.count} of {total} notifications")
    note = f"{total} notifications, {incidents} incidents in order, 8 senders, delivered events to the lake"
    return Result("notifications through the outbox", total / elapsed, "notifications/s", None, "min", note)


def run() -> list[Result]:
    now = build_lake()
    results = measure_evaluation(now)
    results.append(measure_outbox())
    return results


if __name__ == "__main__":
    for result in run():
        print(result)
