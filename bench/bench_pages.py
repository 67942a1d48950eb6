"""Dashboard pages in a real browser at fleet size: wall time until a page is complete.

`python -m bench pages` (on request: the lake takes minutes to generate). Why beside
bench_dashboard (the pages' queries alone): what an operator waits for is the page, which adds
Streamlit's script run, the transfer of every table and chart, and the browser drawing them.

The lake (cached under bench/.data/pages/<size>/, regenerated when missing or over a day old,
else topped up to the current minute): cluster "bench", LAGWATCH_BENCH_PAGES_GROUPS groups
(default 20,000) of 10 partitions each on 300 topics, 6 brokers. group_status has a row per
group and minute over 7 days; metrics_1m 7 days of broker gauges and meters, per-topic meters
and per-partition log-end offsets; pipeline_progress and alert_events 7 days. lag_1m (a row per
group-partition and minute, 200,000 a minute at fleet size) covers only the newest
LAGWATCH_BENCH_PAGES_MINUTE_HOURS hours (default 3): 7 days would be 2 billion rows. The hourly
tables (group_status_1h, lag_1h) cover every closed hour of the 7 days: each hour's minute rows
are generated again in memory (the generator is deterministic, so they are the rows the lake
holds or would hold) and aggregated by the job's own SQL (`lagwatch.lake_queries.hourly_from_minutes`,
as `spark_jobs.hourly.write_hour` runs it), then written as the job writes them, one file per
hour named by `lagwatch.lake_hours.hour_file_stem`. Times are anchored to the wall clock, since
the pages' ranges end now; before each page is measured the lake is topped up to the current
minute (and any hour that closed meanwhile rolled up), as the running pipeline would have.

Measured: `lagwatch dashboard` as an operator runs it (refresh_s raised so no live refresh
runs during a load) and the Debian chromium through playwright, one browser context (its
HTTP cache warm, as a returning reader's) and a new tab per load (a new Streamlit session).
Per page and range: one warm-up load that also learns what the complete page holds (the grids
with cells and the Plotly charts drawn once the script has finished and nothing changed for a
few seconds), then LAGWATCH_BENCH_PAGES_RUNS loads (default 5), each timed from navigation to
complete: no script running, no spinner, and at least as many grids with cells and charts
drawn as the warm-up saw. The viewport is tall (1400×3000) so every grid and chart is on
screen and draws without scrolling. The drill-down is opened by link (?group=) for a group
that is not on the first page of the table, as a pasted link opens it.

Figure: p95 of the timed loads (p50 in the note, with the load average before the loads).
Bars: 1.5 s for a page's opening range (the last hour), 3 s for the 7-day range, which reads
lag_1h for its closed hours.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.bench_alerts import with_all_columns
from bench.common import Result, format_table, minute_slices
from harness.browser import chromium, serving_dashboard
from harness.config_file import section_lines
from lagwatch.lake import ensure_lake, write_rows, write_views_file
from lagwatch.lake_hours import HOUR, HOURLY_SOURCES, hour_file_stem, hour_of, written_hours
from lagwatch.lake_queries import hourly_from_minutes
from shell.broker import free_port

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa

GENERATOR_VERSION = 1
CLUSTER = "bench"
DAYS = 7
GROUPS = int(os.environ.get("LAGWATCH_BENCH_PAGES_GROUPS", "20000"))
PARTITIONS = 10
TOPICS = 300
BROKERS = 6
#: Hours of lag_1m kept (the newest ones); every other table covers DAYS.
MINUTE_HOURS = int(os.environ.get("LAGWATCH_BENCH_PAGES_MINUTE_HOURS", "3"))
RUNS = int(os.environ.get("LAGWATCH_BENCH_PAGES_RUNS", "5"))
DATA = (
    Path(__file__).resolve().parent
    / ".data"
    / "pages"
    / f"groups-{GROUPS}-partitions-{PARTITIONS}-minutes-{MINUTE_HOURS}h"
)
#: A cached lake older than this is generated afresh rather than topped up.
MAX_GAP = dt.timedelta(days=1)
#: The job's default lateness (spark.watermark_s): an hour is closed this long after its end.
LATENESS = dt.timedelta(seconds=30)
#: Opened by link: not on the first page (it is OK, the table shows the worst first).
DRILL_GROUP = f"g{GROUPS * 5 // 8 + 1}"
BAR_OPENING_S = 1.5
BAR_WEEK_S = 3.0
LOAD_TIMEOUT_MS = 120_000
#: The warm-up's page is settled when nothing changed for this long after the script finished.
SETTLED_S = 3.0
VIEWPORT = {"width": 1400, "height": 3000}

BROKER_GAUGES = {
    "up": "1.0",
    "active_controller_count": "(b = 1)::INT::DOUBLE",
    "under_replicated_partitions": "CASE WHEN b = 3 AND minute(ws) < 5 THEN 2.0 ELSE 0.0 END",
    "offline_partitions": "0.0",
    "under_min_isr_partitions": "0.0",
    "partition_count": f"({TOPICS * PARTITIONS * 3 // BROKERS} + b)::DOUBLE",
    "leader_count": f"({TOPICS * PARTITIONS // BROKERS} + b)::DOUBLE",
    "request_handler_avg_idle_percent": "0.6 + (hash(ws, b) % 30) / 100.0",
    "network_processor_avg_idle_percent": "0.7 + (hash(ws, b, 1) % 20) / 100.0",
    "scrape_duration_seconds": "0.02 + (hash(ws, b, 2) % 10) / 1000.0",
}
#: Broker meters: rate per second of the broker.
BROKER_METERS = {
    "messages_in_total": "20000.0 + hash(ws, b) % 2000",
    "bytes_in_total": "2.0e7 + hash(ws, b) % 2000000",
    "bytes_out_total": "6.0e7 + hash(ws, b) % 6000000",
    # One election an hour (broker 2, minute 17): the elections table is on every 1-hour page alike.
    "leader_elections_total": "CASE WHEN b = 2 AND minute(ws) = 17 THEN 1 / 60.0 ELSE 0.0 END",
}
TOPIC_METERS = {
    "messages_in_total": "50.0 + hash(ws, t) % 20",
    "bytes_in_total": "50000.0 + hash(ws, t) % 20000",
    "bytes_out_total": "150000.0 + hash(ws, t) % 60000",
}


@dataclass(frozen=True)
class View:
    """One page and range as measured: its result name, URL path and bar."""

    name: str
    path: str
    bar_s: float


VIEWS = (
    View("overview (1h, opening)", "", BAR_OPENING_S),
    View("consumer groups (1h, opening)", "groups", BAR_OPENING_S),
    View("consumer groups (7d)", "groups?range=7d", BAR_WEEK_S),
    View("group drill-down (1h, opening)", f"groups?group={DRILL_GROUP}", BAR_OPENING_S),
    View("group drill-down (7d)", f"groups?group={DRILL_GROUP}&range=7d", BAR_WEEK_S),
    View("brokers (1h, opening)", "brokers", BAR_OPENING_S),
    View("topics (1h, opening)", "topics", BAR_OPENING_S),
    View("alerts (1h, opening)", "alerts", BAR_OPENING_S),
)

#: What the page holds right now; `expected` (the warm-up's counts) turns it into "complete".
PAGE_STATE_JS = """
(expected) => {
  const doc = document;
  const exception = doc.querySelector('[data-testid=stException]');
  if (exception) return {exception: exception.innerText};
  // The status widget fades out for 200 ms after the run ends: leaving, it no longer counts.
  const widget = doc.querySelector('[data-testid=stStatusWidget]');
  const running = (!!widget && !widget.className.includes('StatusWidget-exit'))
    || !!doc.querySelector('[data-testid=stSpinner], [data-testid=stSkeleton]');
  const grids = Array.from(doc.querySelectorAll('[data-testid=stDataFrame]'));
  const charts = Array.from(doc.querySelectorAll('[data-testid=stPlotlyChart]'));
  const state = {
    running,
    sidebar: !!doc.querySelector('[data-testid=stSidebar]'),
    grids: grids.length,
    drawn: grids.filter(g => g.querySelector('[role=gridcell]')).length,
    charts: charts.length,
    plotted: charts.filter(c => c.querySelector('.main-svg')).length,
  };
  if (expected === null) return state;
  const complete = !running && state.sidebar && state.drawn >= expected.drawn && state.plotted >= expected.plotted;
  return complete ? state : false;
}
""".strip()


def _progress(message: str) -> None:
    print(f"bench_pages: {message}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------
# The lake: rows generated by DuckDB from the minute and the entity numbers alone.


def _minutes(start: dt.datetime, end: dt.datetime) -> str:
    return f"range(TIMESTAMPTZ '{start.isoformat()}', TIMESTAMPTZ '{end.isoformat()}', INTERVAL 1 MINUTE) m(ws)"


def _status_of(column: str) -> str:
    """A few groups in each bad status, the same ones every minute (a table worst first has a head)."""
    return (
        f"CASE WHEN {column} % 997 = 0 THEN 'STOP' WHEN {column} % 211 = 0 THEN 'STALL' "
        f"WHEN {column} % 53 = 0 THEN 'WARN' ELSE 'OK' END"
    )


def group_status_sql(start: dt.datetime, end: dt.datetime, named: bool = True) -> str:
    """group_status rows; `named` False keeps the group id a number (see roll_hours)."""
    group = "'g' || g" if named else "g"
    return (
        f"SELECT '{CLUSTER}' cluster, {group} group_id, {_status_of('g')} status, "
        f"'bench: ' || {_status_of('g')} reason, "
        f"'burrow' rule, l total_lag, l // 4 max_lag, l / 50.0 max_time_lag_s, 'interpolated' max_time_lag_method, "
        f"{PARTITIONS} partitions, 'topic-' || (g % {TOPICS}) topics, 'Stable' group_state, 3 members, "
        f"0 rebalances, 0.0 rebalancing_s, 0 storm_rebalances, "
        f"CASE WHEN g % 10 = 0 THEN 'consumer' ELSE 'classic' END group_type, NULL::INTEGER group_epoch, "
        f"ws window_start, ws + INTERVAL 30 SECOND updated_at, 1::BIGINT version "
        f"FROM (SELECT ws, g, (hash(ws, g) % 10000)::BIGINT l FROM {_minutes(start, end)}, range({GROUPS}) r(g))"
    )


def lag_sql(start: dt.datetime, end: dt.datetime, named: bool = True) -> str:
    """lag_1m rows; `named` False keeps the group id and topic numbers (see roll_hours)."""
    owner = "g || '-' || (p % 3)"
    group, topic = ("'g' || g", f"'topic-' || (g % {TOPICS})") if named else ("g", f"g % {TOPICS}")
    return (
        f"SELECT '{CLUSTER}' cluster, ws window_start, ws + INTERVAL 1 MINUTE window_end, {group} group_id, "
        f"{topic} topic, p::INTEGER partition, e - l committed_offset, e end_offset, l lag, "
        f"l + (g + p) % 100 lag_max, 50.0 consume_rate, 50.0 produce_rate, l / 50.0 time_lag_s, "
        f"'interpolated' time_lag_method, CASE WHEN l > 900 THEN NULL ELSE l / 10.0 END eta_s, 60.0 rate_span_s, "
        f"CASE WHEN l > 900 THEN 'WARN' ELSE 'OK' END status, 'bench' reason, 'burrow' rule, "
        f"'member-' || {owner} owner_member_id, 'client-' || {owner} owner_client_id, "
        f"'/10.0.' || (g % 250) || '.' || (p % 3) owner_host, 0 owner_changes, NULL owner_pending, "
        f"CASE WHEN g % 10 = 0 THEN 'consumer' ELSE 'classic' END group_type, 1::BIGINT version "
        f"FROM (SELECT ws, g, p, epoch(ws)::BIGINT * 50 + g * 1000 e, (hash(ws, g, p) % 1000)::BIGINT l "
        f"FROM {_minutes(start, end)}, range({GROUPS}) r(g), range({PARTITIONS}) q(p))"
    )


def _metric_rows(source: str, metric: str, kind: str, labels: dict[str, str], value: str, rate: str,
                 entities: str, minutes: str) -> str:  # fmt: skip
    """One metric's rows: `labels` (broker, topic, partition, client_id) and `value`/`rate` as SQL."""
    cols = {name: labels.get(name, "NULL") for name in ("broker", "topic", "partition", "client_id")}
    return (
        f"SELECT '{CLUSTER}' cluster, ws window_start, ws + INTERVAL 1 MINUTE window_end, '{source}' source, "
        f"'{metric}' metric, '{kind}' kind, ({cols['broker']})::VARCHAR broker, ({cols['topic']})::VARCHAR topic, "
        f"({cols['partition']})::INTEGER partition, NULL::VARCHAR group_id, ({cols['client_id']})::VARCHAR client_id, "
        f"6::BIGINT samples, v min, v max, v avg, v first, v last, r rate_per_s, 1::BIGINT version "
        f"FROM (SELECT *, ({value})::DOUBLE v, ({rate})::DOUBLE r FROM {minutes}, {entities})"
    )


def metrics_sql(start: dt.datetime, end: dt.datetime) -> str:
    minutes = _minutes(start, end)
    brokers = f"range(1, {BROKERS + 1}) bs(b)"
    topics = f"range({TOPICS}) ts(t)"
    parts = [
        _metric_rows("jmx", m, "gauge", {"broker": "b"}, v, "NULL", brokers, minutes) for m, v in BROKER_GAUGES.items()
    ]
    parts += [
        _metric_rows("jmx", m, "counter", {"broker": "b"}, f"epoch(ws) * ({r})", r, brokers, minutes)
        for m, r in BROKER_METERS.items()
    ]
    topic_labels = {"broker": f"t % {BROKERS} + 1", "topic": "'topic-' || t"}
    parts += [
        _metric_rows("jmx", m, "counter", topic_labels, f"epoch(ws) * ({r})", r, topics, minutes)
        for m, r in TOPIC_METERS.items()
    ]
    offsets = f"{topics}, range({PARTITIONS}) ps(p)"
    offset = f"epoch(ws)::BIGINT * {GROUPS // TOPICS * 5 + 5} + t * 100000 + p"
    parts.append(
        _metric_rows("admin", "log_end_offset", "gauge", {"topic": "'topic-' || t", "partition": "p"}, offset, "NULL",
                     offsets, minutes)
    )  # fmt: skip
    admin = {"client_id": f"'admin@{CLUSTER}'"}
    parts.append(_metric_rows("admin", "up", "gauge", admin, "1.0", "NULL", "range(1) a(x)", minutes))
    parts.append(
        _metric_rows("admin", "scrape_duration_seconds", "gauge", admin, "0.4", "NULL", "range(1) a(x)", minutes)
    )
    return "\nUNION ALL\n".join(parts)


def progress_sql(start: dt.datetime, end: dt.datetime) -> str:
    return (
        f"SELECT '{CLUSTER}' cluster, 'windows' query, epoch(ws)::BIGINT * 2 + s batch_id, "
        f"ws + to_seconds(10 + 30 * s) ts, {GROUPS * PARTITIONS // 2}::BIGINT input_rows, "
        f"{GROUPS * PARTITIONS / 30:.1f} input_rows_per_s, {GROUPS * PARTITIONS / 10:.1f} processed_rows_per_s, "
        f"4000::BIGINT batch_duration_ms, ws - INTERVAL 30 SECOND watermark, 12.0 + s freshness_s, 1::BIGINT version "
        f"FROM {_minutes(start, end)}, range(2) q(s)"
    )


def alert_events_sql(start: dt.datetime, end: dt.datetime) -> str:
    """Each minute a lag alert fires for one group (delivered at once), and the one of 30 minutes ago resolves."""
    group = f"'g' || (epoch(ws)::BIGINT // 60 * 7919 % {GROUPS})"
    fired = "ws - INTERVAL 30 MINUTE"
    group_then = f"'g' || (epoch({fired})::BIGINT // 60 * 7919 % {GROUPS})"

    def event(kind: str, group_sql: str, seq: int, receiver: str) -> str:
        head = json.dumps({"alertname": "ConsumerLagHigh", "cluster": CLUSTER})[:-1]
        labels = f"'{head}, \"group_id\": \"' || {group_sql} || '\"}}'"
        return (
            f"SELECT '{CLUSTER}' cluster, ws + INTERVAL 5 SECOND ts, '{kind}' event, 'ConsumerLagHigh' alertname, "
            f"'lag-' || {group_sql} incident_key, {seq}::BIGINT seq, 'warning' severity, {labels} labels, "
            f"(hash(ws) % 100000)::DOUBLE value, NULL value_text, {receiver} receiver, '' detail, "
            f"'{kind}-' || epoch(ws)::BIGINT event_id, 1::BIGINT version FROM {_minutes(start, end)}"
        )

    return "\nUNION ALL\n".join(
        [
            event("firing", group, 1, "NULL"),
            event("delivered", group, 1, "'ops'"),
            event("resolved", group_then, 2, "NULL"),
        ]
    )


#: table -> (its rows over [start, end) as SQL, rows per minute).
GENERATORS = {
    "group_status": (group_status_sql, GROUPS),
    "lag_1m": (lag_sql, GROUPS * PARTITIONS),
    "metrics_1m": (metrics_sql, TOPICS * (PARTITIONS + len(TOPIC_METERS)) + BROKERS * 14 + 2),
    "pipeline_progress": (progress_sql, 2),
    "alert_events": (alert_events_sql, 3),
}


def fill(con: duckdb.DuckDBPyConnection, lake: Path, start: dt.datetime, end: dt.datetime) -> None:
    """Every table's rows with window_start in [start, end) (lag_1m: only its newest MINUTE_HOURS)."""
    minutes_from = hour_of(end) - dt.timedelta(hours=MINUTE_HOURS - 1)
    for table, (sql, per_minute) in GENERATORS.items():
        first = max(start, minutes_from) if table == "lag_1m" else start
        for low, high in minute_slices(first, end, per_minute):
            data = with_all_columns(table, con.sql(sql(low, high)).to_arrow_table())
            write_rows(lake, table, data, f"pages-{low:%Y%m%dT%H%M}")
    _progress(f"rows {start:%Y-%m-%d %H:%M} → {end:%Y-%m-%d %H:%M} written")


#: hourly table -> its minute rows over [start, end) as the generator makes them (ids as numbers),
#: and the names the ids get back once aggregated.
MINUTE_SQL = {"group_status_1h": group_status_sql, "lag_1h": lag_sql}
NAMED_IDS = {
    "group_status_1h": "'g' || group_id AS group_id",
    "lag_1h": "'g' || group_id AS group_id, 'topic-' || topic AS topic",
}
#: Hours aggregated per query: fewer, larger scans (a fleet's hour of lag_1m is 12 M rows).
HOURS_PER_QUERY = 6


def closed_hours(first: dt.datetime, end: dt.datetime) -> list[dt.datetime]:
    """The UTC hours from `first`'s on whose end is LATENESS older than the newest data (`end`)."""
    hours, hour = [], hour_of(first)
    while hour + HOUR <= end - LATENESS:
        hours.append(hour)
        hour += HOUR
    return hours


def roll_hours(con: duckdb.DuckDBPyConnection, lake: Path, first: dt.datetime, end: dt.datetime) -> int:
    """Write each hourly table's closed hours that lack their file; how many were written.

    The minute rows are generated again as a view of the minute table's name, so the job's own
    aggregation (`hourly_from_minutes`) reads them as it reads the lake's. The generator keeps the
    ids numbers there (grouping 12 M rows an hour by strings would take most of the time) and the
    aggregated rows get their names back; every row's version is the minutes' version (1).
    """
    written = 0
    hours = closed_hours(first, end)
    for hourly, minute_sql in MINUTE_SQL.items():
        todo = sorted(set(hours) - written_hours(lake, hourly, hours))
        for batch in (todo[i : i + HOURS_PER_QUERY] for i in range(0, len(todo), HOURS_PER_QUERY)):
            low, high = max(first, batch[0]), batch[-1] + HOUR
            con.execute(f"CREATE OR REPLACE TEMP VIEW {HOURLY_SOURCES[hourly]} AS {minute_sql(low, high, False)}")
            inner = hourly_from_minutes(hourly, "window_start >= $start AND window_start < $end")
            sql = f"SELECT * REPLACE ({NAMED_IDS[hourly]}), 1::BIGINT AS version FROM (\n{inner})"
            data = con.sql(sql, params={"start": low, "end": high}).to_arrow_table()
            for hour in batch:
                write_rows(lake, hourly, _rows_of_hour(data, hour), file_stem=hour_file_stem(hour))
            written += len(batch)
        if todo:
            _progress(f"{hourly}: {len(todo)} hour(s) rolled up")
    return written


def _rows_of_hour(data: pa.Table, hour: dt.datetime) -> pa.Table:
    import pyarrow as pa
    import pyarrow.compute as pc

    return data.filter(pc.equal(data["hour_start"], pa.scalar(hour, data.schema.field("hour_start").type)))


def _connect() -> duckdb.DuckDBPyConnection:
    import duckdb

    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    con.execute("SET enable_progress_bar = false")
    return con


def _now_minute() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(second=0, microsecond=0)


@dataclass
class BenchLake:
    """The cached lake and its span: rows from `first` up to (not including) the minute `end`."""

    root: Path
    first: dt.datetime
    end: dt.datetime

    @property
    def lake(self) -> Path:
        return self.root / "lake"

    @property
    def views(self) -> Path:
        return self.root / "lagwatch.duckdb"

    def save(self) -> None:
        meta = {"generator": GENERATOR_VERSION, "first": self.first.isoformat(), "end": self.end.isoformat()}
        (self.root / "meta.json").write_text(json.dumps(meta))

    def top_up(self) -> None:
        """Rows up to the current minute and the hours closed since, as the running pipeline writes them."""
        now = _now_minute()
        con = _connect()
        try:
            if now > self.end:
                fill(con, self.lake, self.end, now)
                self.end = now
                self.save()
            roll_hours(con, self.lake, self.first, self.end)
        finally:
            con.close()


def cached_lake() -> BenchLake:
    """The lake of this size, topped up to now; generated afresh when missing, of another
    generator version, or too old to top up."""
    meta_path = DATA / "meta.json"
    now = _now_minute()
    if meta_path.exists():
        meta = json.loads(meta_path.read_text())
        end = dt.datetime.fromisoformat(meta["end"])
        if meta.get("generator") == GENERATOR_VERSION and now - end < MAX_GAP:
            found = BenchLake(DATA, dt.datetime.fromisoformat(meta["first"]), end)
            found.top_up()
            return found
    shutil.rmtree(DATA, ignore_errors=True)
    DATA.mkdir(parents=True)
    fresh = BenchLake(DATA, now - dt.timedelta(days=DAYS), now - dt.timedelta(days=DAYS))
    ensure_lake(fresh.lake)
    started = time.monotonic()
    fresh.top_up()
    write_views_file(fresh.lake, fresh.views)
    _progress(f"lake generated in {time.monotonic() - started:.0f} s")
    return fresh


def write_dashboard_config(lake: BenchLake, port: int) -> Path:
    """The dashboard's config.toml: this lake, the bench cluster, no alert engine, no live refresh
    during a load (a refresh rerun would compete with the load measured)."""
    sections: dict[str, dict[str, Any]] = {
        "cluster": {"name": CLUSTER, "bootstrap_servers": "127.0.0.1:9"},
        "lake": {"path": str(lake.lake), "duckdb_path": str(lake.views)},
        "dashboard": {"host": "127.0.0.1", "port": port, "refresh_s": 3600},
        "alerts": {"run": False, "state_dir": str(lake.root / "state" / "alerts")},
    }
    path = lake.root / "config.toml"
    path.write_text("\n".join(section_lines(sections)) + "\n")
    return path


# ---------------------------------------------------------------------------------------
# The browser: one warm-up load that learns what "complete" holds, then the timed loads.


def settle(context: Any, url: str, shot: Path) -> dict[str, int]:
    """Load `url` once and wait until its script has finished and nothing changed for SETTLED_S;
    what the complete page holds (grids with cells, charts drawn)."""
    page = context.new_page()
    try:
        page.goto(url)
        page.get_by_test_id("stSidebar").get_by_text("Time range").wait_for(timeout=LOAD_TIMEOUT_MS)
        deadline = time.monotonic() + LOAD_TIMEOUT_MS / 1000
        last: dict[str, Any] = {}
        since = time.monotonic()
        while time.monotonic() < deadline:
            state = page.evaluate(PAGE_STATE_JS, None)
            if "exception" in state:
                raise RuntimeError(f"{url}: exception on the page: {state['exception'][:300]}")
            if state != last or state["running"]:
                last, since = state, time.monotonic()
            elif time.monotonic() - since >= SETTLED_S:
                break
            page.wait_for_timeout(250)
        else:
            raise RuntimeError(f"{url}: the page did not settle in {LOAD_TIMEOUT_MS / 1000:.0f} s: {last}")
        if not last["drawn"]:
            raise RuntimeError(f"{url}: no grid drew a cell: {last}")
        page.screenshot(path=str(shot), full_page=True)
        return {"drawn": last["drawn"], "plotted": last["plotted"], "grids": last["grids"], "charts": last["charts"]}
    finally:
        page.close()


def timed_load(context: Any, url: str, expected: dict[str, int]) -> float:
    """Seconds from navigation to the page complete, in a new tab (a new Streamlit session)."""
    page = context.new_page()
    try:
        started = time.perf_counter()
        page.goto(url, wait_until="commit")
        handle = page.wait_for_function(PAGE_STATE_JS, arg=expected, timeout=LOAD_TIMEOUT_MS, polling=25)
        elapsed = time.perf_counter() - started
        state = handle.json_value()
        if "exception" in state:
            raise RuntimeError(f"{url}: exception on the page: {state['exception'][:300]}")
        return elapsed
    finally:
        page.close()


def p95(values: list[float]) -> float:
    """Nearest-rank 95th percentile (of 5 loads: the slowest)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, -(-95 * len(ordered) // 100) - 1))]


def measure_view(context: Any, base: str, view: View, lake: BenchLake) -> Result:
    lake.top_up()
    url = f"{base}/{view.path}"
    shots = lake.root / "screens"
    shots.mkdir(exist_ok=True)
    expected = settle(context, url, shots / f"{view.name.split(' (')[0].replace(' ', '-')}-{view.bar_s:g}.png")
    load = os.getloadavg()
    times = [timed_load(context, url, expected) for _ in range(RUNS)]
    _progress(f"{view.name}: {', '.join(f'{t:.2f}' for t in times)} s; complete = {expected}")
    note = (
        f"p50 {statistics.median(times):.2f} s, n={RUNS} after 1 warm-up; "
        f"{expected['drawn']} grids, {expected['plotted']} charts; "
        f"load avg {load[0]:.2f}/{load[1]:.2f}/{load[2]:.2f}; {GROUPS:,} groups × {PARTITIONS}"
    )
    return Result(view.name, p95(times), "s", view.bar_s, "max", note)


def run() -> list[Result]:
    started = time.monotonic()
    lake = cached_lake()
    _progress(
        f"lake ready in {time.monotonic() - started:.0f} s: {lake.first:%Y-%m-%d %H:%M} → {lake.end:%Y-%m-%d %H:%M}"
    )
    port = free_port()
    config = write_dashboard_config(lake, port)
    results = []
    with serving_dashboard(config, port, lake.root / "dashboard.log") as base, chromium() as browser:
        context = browser.new_context(viewport=VIEWPORT)
        try:
            for view in VIEWS:
                results.append(measure_view(context, base, view, lake))
        finally:
            context.close()
    return results


if __name__ == "__main__":
    # `python -m bench.bench_pages`: the table alone (`python -m bench pages` also rewrites bench/results.*).
    print(format_table([("pages", result) for result in run()]))
