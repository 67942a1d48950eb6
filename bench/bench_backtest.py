"""Backtest: replay the 11 default rules over a 7-day lake (`lagwatch alerts backtest --since 7d`).

The lake (cached under bench/.data/backtest/, regenerated when missing), generated a day per
DuckDB statement and written through `lagwatch.lake.write_rows` like bench_alerts': 7 days of
1-minute rows of group_status for 2,000 groups (20.2M rows), lag_1m for 200 groups × 10
partitions (20.2M rows: 2,000 × 20 partitions at one row a minute would be 403M rows, more than
this machine generates in a benchmark run), 8 broker metrics for 5 brokers and pipeline
progress. Incidents are sparse, as in a real week: about 0.5% of group-hours go STOP with their
time lag high for half an hour, and a partition's retention margin dips now and then.

Bar: ≤ 60 s for the whole replay (40,320 evaluations at the default 15 s), from issue 26.
"""

from __future__ import annotations

import datetime as dt
import json
import sys
import tempfile
import time
from pathlib import Path

from bench.bench_alerts import METRICS, _with_all_columns
from bench.common import Result, cpu_seconds_self, peak_rss_mb_self
from lagwatch.config import parse_config
from lagwatch.lake import ensure_lake, write_rows

DATA = Path(__file__).resolve().parent / ".data" / "backtest"
DAYS = 7
STATUS_GROUPS = 2_000
LAG_GROUPS, PARTITIONS = 200, 10
BROKERS = 5
BAR_S = 60.0


def _progress(message: str) -> None:
    print(f"bench_backtest: {message}", file=sys.stderr, flush=True)


def _minutes(day_start: str) -> str:
    return f"range(TIMESTAMPTZ '{day_start}', TIMESTAMPTZ '{day_start}' + INTERVAL 1 DAY, INTERVAL 1 MINUTE) m(ws)"


def _incident(*keys: str, one_in: int) -> str:
    """True for the first half hour of one hour in `one_in` per key set (deterministic)."""
    return f"(hash({', '.join(keys)}, date_trunc('hour', ws)) % {one_in} = 0 AND minute(ws) < 30)"


def _day_sql(table: str, day_start: str) -> str:
    minutes = _minutes(day_start)
    if table == "group_status":
        down = _incident("g", one_in=200)
        return (
            f"SELECT 'bench' cluster, 'g' || g group_id, CASE WHEN {down} THEN 'STOP' ELSE 'OK' END status, "
            f"'bench' reason, 'burrow' rule, (hash(ws, g) % 10000)::BIGINT total_lag, 999::BIGINT max_lag, "
            f"CASE WHEN {down} THEN 900.0 ELSE (hash(ws, g) % 120)::DOUBLE END max_time_lag_s, "
            f"20 partitions, 'topic' topics, ws window_start, ws + INTERVAL 55 SECOND updated_at, 1::BIGINT version "
            f"FROM {minutes}, range({STATUS_GROUPS}) r(g)"
        )
    if table == "lag_1m":
        dip = _incident("g", "p", one_in=500)
        return (
            f"SELECT 'bench' cluster, ws window_start, ws + INTERVAL 1 MINUTE window_end, 'g' || g group_id, "
            f"'topic-' || (g % 20) topic, p::INTEGER partition, 1000::BIGINT committed_offset, "
            f"1100::BIGINT end_offset, 100::BIGINT lag, 100::BIGINT lag_max, 50.0 consume_rate, 50.0 produce_rate, "
            f"2.0 time_lag_s, 'interpolated' time_lag_method, NULL::DOUBLE eta_s, 'OK' status, 'bench' reason, "
            f"CASE WHEN {dip} THEN 600.0 ELSE 86400.0 END retention_margin_s, 1::BIGINT version "
            f"FROM {minutes}, range({LAG_GROUPS}) r(g), range({PARTITIONS}) q(p)"
        )
    if table == "metrics_1m":
        names = ", ".join(f"'{m}'" for m in METRICS)
        return (
            f"SELECT 'bench' cluster, ws window_start, ws + INTERVAL 1 MINUTE window_end, 'jmx' source, metric, "
            f"'gauge' kind, b::VARCHAR broker, NULL topic, NULL::INTEGER partition, NULL group_id, NULL client_id, "
            f"6::BIGINT samples, v min, v max, v avg, v first, v last, "
            f"CASE WHEN metric = 'leader_elections_total' THEN 0.0 END rate_per_s, 1::BIGINT version "
            f"FROM (SELECT ws, metric, b, CASE metric WHEN 'up' THEN 1.0 "
            f"WHEN 'active_controller_count' THEN (b = 1)::INT "
            f"WHEN 'under_replicated_partitions' THEN ({_incident('b', one_in=100)})::INT "
            f"WHEN 'offline_partitions' THEN 0.0 ELSE (hash(ws, metric, b) % 100)::DOUBLE END v "
            f"FROM {minutes}, unnest([{names}]) t(metric), range(1, {BROKERS + 1}) r(b))"
        )
    return (
        f"SELECT 'bench' cluster, 'samples' query, epoch(ws)::BIGINT batch_id, ws ts, 1000::BIGINT input_rows, "
        f"100.0 input_rows_per_s, 100.0 processed_rows_per_s, 500::BIGINT batch_duration_ms, ws watermark, "
        f"3.0 freshness_s, 1::BIGINT version FROM {minutes}"
    )


TABLES = ("group_status", "lag_1m", "metrics_1m", "pipeline_progress")


def build_lake() -> dict[str, object]:
    """Generate the 7-day lake once; return its end (epoch seconds) and size."""
    import duckdb

    lake, meta = DATA / "lake", DATA / "meta.json"
    if meta.exists():
        return json.loads(meta.read_text())
    ensure_lake(lake)
    end = dt.datetime.now(dt.UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    rows = dict.fromkeys(TABLES, 0)
    for offset in range(DAYS, 0, -1):
        day = end - dt.timedelta(days=offset)
        for table in TABLES:
            data = _with_all_columns(table, con.sql(_day_sql(table, day.isoformat())).to_arrow_table())
            write_rows(lake, table, data, f"bench-{day:%Y%m%d}")
            rows[table] += data.num_rows
        _progress(f"generated {day:%Y-%m-%d}")
    size = sum(f.stat().st_size for f in lake.rglob("*.parquet"))
    info = {"until": end.timestamp() - 1, "rows": rows, "bytes": size}
    meta.write_text(json.dumps(info))
    return info


def run() -> list[Result]:
    from alerts.backtest import backtest
    from alerts.evaluate import Grid
    from alerts.rules import compile_rules

    info = build_lake()
    until = float(info["until"])  # type: ignore[arg-type]
    with tempfile.TemporaryDirectory() as tmp:
        config = parse_config(
            {
                "cluster": {"name": "bench"},
                "lake": {"path": str(DATA / "lake"), "duckdb_path": str(Path(tmp) / "lagwatch.duckdb")},
                "alerts": {"state_dir": tmp},
            },
            environ={},
        )
        rules = compile_rules(config.alerts)
        every = config.alerts.evaluate_every_s
        grid = Grid.over(until - DAYS * 86_400 + every, until, every)
        started, cpu_started = time.perf_counter(), cpu_seconds_self()
        report = backtest(config, rules, [r.name for r in rules], grid)
        elapsed, cpu = time.perf_counter() - started, cpu_seconds_self() - cpu_started
    alerts = sum(r.totals["alerts"] for r in report.rules)
    notifications = sum(r.totals["notifications"] for r in report.rules)
    rows = info["rows"]
    note = (
        f"{len(rules)} default rules, {grid.steps:,} evaluations; lake {info['bytes'] / 1e9:.2f} GB: "  # type: ignore[operator]
        + ", ".join(f"{t} {n / 1e6:.1f}M rows" for t, n in rows.items())  # type: ignore[union-attr]
        + f"; {alerts:,} alerts, {notifications:,} notifications, {len(report.status_changes):,} status changes; "
        f"{cpu:.0f} CPU s; peak RSS {peak_rss_mb_self():,.0f} MB"
    )
    return [Result("replay 11 default rules over 7 days", elapsed, "s", BAR_S, "max", note)]


if __name__ == "__main__":
    for result in run():
        print(result)
