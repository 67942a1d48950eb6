"""Evaluate compiled rules over the lake: which alert conditions hold at each evaluation time.

One implementation serves the live engine and the backtest: a rule's query answers "at which
steps of an evaluation grid does each series have which value". Live, the grid is one step
(`now`); a backtest passes every evaluation time of its range and gets every answer from the
same query, run once. A series' value at a step is what the live engine always read: its
newest row with time <= step and within the rule's lookback (its window for rates), reduced
over the series of one `by` label set. Thresholds are applied in numpy (`passes`) per rule.

Why a snapshot first: the views dedupe the whole table (newest version per key), so 500 rules
each scanning seven days would read the lake 500 times. The rows of each table the rules need,
for the grid's range plus the longest lookback, are copied once (the time filter is on a key
column, so DuckDB pushes it below the dedup into the Parquet scan) into a TEMP table; then at
most one query per rule shape runs against it: rules that differ only in threshold, op, level
or text share one query. Every rule sees the same data. Rows of every configured
cluster count (`config.clusters`); each alert carries its row's cluster.

Two query forms, chosen by the rule's shape and never by who asks:
- a rule whose `by` names every label of its series (one series per alert) is answered as
  segments: each row is the series' newest from its time until the next row or its lookback
  ends, so a week costs one pass over the rows;
- any other rule (a reduce over series, a rate, an absence, dead letters) places each row on
  the steps whose lookback it falls in and aggregates per step.
Rows newer than a step are ignored at that step, so tests move time by writing rows.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import itertools
import json
import logging
import math
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from alerts.rules import DEAD_LETTERS, METRIC_TABLES, CompiledRule
from lagwatch.config import Config
from lagwatch.gc_pause import cyclic_gc_paused
from lagwatch.lake import REASON_COLUMNS, connect_readonly, table_dir
from lagwatch.vocabulary import STATUS_ORDER, status_rank

log = logging.getLogger(__name__)

#: Live evaluations one DuckDB session serves before it is reopened (Evaluator.evaluate): at the
#: default 15 s, every 5 minutes, short enough that what a session holds on to between reopenings
#: stays a small sawtooth in the engine's RSS rather than a climb (bench/RECORDS.md, "Soak").
SESSION_EVALUATIONS = 20


def fingerprint(labels: dict[str, str]) -> str:
    """An alert instance's identity: its label set."""
    return hashlib.sha256(json.dumps(labels, sort_keys=True).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Condition:
    """One series for which a rule's condition holds at an evaluation time."""

    rule: CompiledRule
    labels: dict[str, str]
    value: float
    extra: dict[str, Any] = field(default_factory=dict)

    @functools.cached_property
    def fingerprint(self) -> str:
        return fingerprint(self.labels)


@dataclass(frozen=True)
class Grid:
    """Evaluation times: `start`, then every `every_s` seconds, `steps` of them (epoch seconds)."""

    start: float
    every_s: float
    steps: int

    @classmethod
    def over(cls, since: float, until: float, every_s: float) -> Grid:
        return cls(since, every_s, math.floor((until - since) / every_s) + 1)

    @property
    def end(self) -> float:
        return self.at(self.steps - 1)

    def at(self, step: int) -> float:
        return self.start + step * self.every_s

    def params(self) -> dict[str, Any]:
        """In whole microseconds, the lake's resolution, so a row at a step is exactly at it."""
        return {"start": _micros(self.start), "every": _micros(self.every_s), "steps": self.steps}


@dataclass(frozen=True)
class Timeline:
    """One rule's true conditions over a grid: `conditions[i]` holds on steps [k_from[i], k_to[i])."""

    rule: CompiledRule
    conditions: list[Condition]
    k_from: np.ndarray
    k_to: np.ndarray

    def at(self, step: int) -> Iterator[Condition]:
        for i in np.flatnonzero((self.k_from <= step) & (step < self.k_to)):
            yield self.conditions[i]


def snapshot_name(table: str) -> str:
    """The TEMP table `Evaluator.load` copies a lake table's rows into."""
    return f"recent_{table}"


def _status_case(column: str) -> str:
    whens = " ".join(f"WHEN '{s}' THEN {i}" for i, s in enumerate(STATUS_ORDER))
    return f"(CASE {column} {whens} ELSE NULL END)"


def _value_expr(rule: CompiledRule) -> str:
    if rule.value_column == "status":
        return _status_case("status")
    return f'CAST("{rule.value_column}" AS DOUBLE)'


_NUMPY_OPS = {">": "greater", ">=": "greater_equal", "<": "less", "<=": "less_equal", "==": "equal", "!=": "not_equal"}


def passes(rule: CompiledRule, values: np.ndarray) -> np.ndarray:
    """Which series meet the rule's condition (vectorised: many rules share one shape's values)."""
    if rule.kind == "status":
        return values >= status_rank(rule.level)
    if rule.kind == "absence":
        return values >= rule.for_s
    return getattr(np, _NUMPY_OPS[rule.op])(values, rule.threshold)


def _filters(rule: CompiledRule) -> str:
    """Rows of this rule's series (by-labels present) that are current at some step of the grid."""
    time_col = rule.source.time_column
    parts = [
        f"{time_col} <= make_timestamptz({_START} + ({_STEPS} - 1) * {_EVERY})",
        f"{time_col} > make_timestamptz({_START} - {_micros(rule.lookback_s)})",
    ]
    if rule.metric is not None:
        quoted = rule.metric.replace("'", "''")
        parts.append(f"metric = '{quoted}'")
    if rule.sample_source:
        parts.append(f"source = {sql_literal(rule.sample_source)}")
    parts += [f'"{label}" IS NOT NULL' for label in rule.by]
    return " AND ".join(parts)


def _micros(seconds: float) -> int:
    """Whole microseconds rounded as datetime.fromtimestamp rounds them (the fraction alone, half
    to even), so a row written at a float time and a step at that same time are the same instant;
    rounding ``seconds * 1e6`` whole can land one microsecond apart."""
    whole = math.floor(seconds)
    return whole * 1_000_000 + round((seconds - whole) * 1_000_000)


#: The grid's parameters in SQL, as BIGINT (a small bound value would be INT32 and overflow).
_START, _EVERY, _STEPS = "CAST($start AS BIGINT)", "CAST($every AS BIGINT)", "CAST($steps AS BIGINT)"


def _first_step(micros: str) -> str:
    """The first step at or after `micros` (epoch microseconds)."""
    return f"greatest(0, ceil(({micros} - {_START}) / {_EVERY}))::BIGINT"


def _end_step(micros: str) -> str:
    """One past the last step strictly before `micros`."""
    return f"least({_STEPS}, ceil(({micros} - {_START}) / {_EVERY}))::BIGINT"


def reason_column(rule: CompiledRule) -> str | None:
    """The column whose text explains the rule's value (the alert's {reason}), if its table has one."""
    return REASON_COLUMNS.get((rule.source.table, rule.value_column))


def one_series_per_alert(rule: CompiledRule) -> bool:
    """True when `by` names every label of the rule's series, so no reduce combines series."""
    return rule.kind in ("threshold", "status") and set(rule.source.series) - {"cluster"} <= set(rule.by)


def _segments_sql(rule: CompiledRule, group: str, series: str) -> str:
    """Each row holds from its time until the series' next row or the end of its lookback."""
    time_col = rule.source.time_column
    reason = reason_column(rule) or "NULL"
    lookback = _micros(rule.lookback_s)
    return (
        f"WITH rows AS (SELECT {series}, epoch_us({time_col}) AS e, {_value_expr(rule)} AS v, {reason} AS reason "
        f"FROM {snapshot_name(rule.source.table)} WHERE {_filters(rule)}), "
        f"held AS (SELECT *, least(coalesce(lead(e) OVER (PARTITION BY {series} ORDER BY e), e + {lookback}), "
        f"e + {lookback}) AS e_end FROM rows) "
        f"SELECT {group}, v AS value, coalesce(reason, '') AS reason, {_first_step('e')} AS k_from, "
        f"{_end_step('e_end')} AS k_to FROM held WHERE v IS NOT NULL AND {_first_step('e')} < {_end_step('e_end')}"
    )


def _per_step_sql(rule: CompiledRule, group: str, series: str) -> str:
    """Each row joins the steps whose lookback (or rate window) it is in; values are per step."""
    table = snapshot_name(rule.source.table)
    time_col = rule.source.time_column
    value = _value_expr(rule)
    horizon = rule.window_s if rule.kind == "rate" and rule.source.table != DEAD_LETTERS else rule.lookback_s
    rows = f"SELECT *, epoch_us({time_col}) AS e FROM {table} WHERE {_filters(rule)}"
    if rule.kind == "rate" and rule.source.table != DEAD_LETTERS:
        rows += f" AND {value} IS NOT NULL"
    steps = f"SELECT *, unnest(range({_first_step('e')}, {_end_step(f'e + {_micros(horizon)}')})) AS k FROM rows"
    head = f"WITH rows AS ({rows}), at_step AS ({steps}) "
    step_range = "k AS k_from, k + 1 AS k_to"
    if rule.source.table == DEAD_LETTERS:
        per = "1.0" if rule.kind != "rate" else f"{rule.window_s!r}"
        return head + f"SELECT {step_range}, {group}, count(*) / {per} AS value, '' AS reason FROM at_step GROUP BY ALL"
    if rule.kind == "absence":
        since = f"(({_START} + k * {_EVERY}) - max(e)) / 1e6"
        return head + f"SELECT {step_range}, {group}, {since} AS value, '' AS reason FROM at_step GROUP BY k, {group}"
    if rule.kind == "rate":
        latest = "(arg_max(v, e) - arg_min(v, e)) / nullif((max(e) - min(e)) / 1e6, 0) AS v, NULL AS reason"
    else:
        # The newest row's value even when NULL (then the series has no current value): a plain
        # arg_max skips NULLs and would bring back an older row's, e.g. a stale eta_s.
        column = reason_column(rule)
        reason = f"arg_max_null({column}, e)" if column else "NULL"
        latest = f"arg_max_null(v, e) AS v, {reason} AS reason"
    return (
        head + f", valued AS (SELECT *, {value} AS v FROM at_step), "
        f"latest AS (SELECT k, {series}, {latest} FROM valued GROUP BY k, {series}) "
        f"SELECT {step_range}, {group}, {rule.reduce}(v) AS value, coalesce(arg_max(reason, v), '') AS reason "
        f"FROM latest WHERE v IS NOT NULL GROUP BY ALL"
    )


def shape_sql(rule: CompiledRule) -> str:
    """The query behind a rule: (cluster, by-labels..., value, reason, k_from, k_to) over the grid.

    Rules that differ only in op, threshold, level, severity or text share the same query
    text, so it runs once for all of them; `passes` then picks each rule's series.
    """
    group = ", ".join(["cluster", *(f'"{b}"' for b in rule.by)])
    series = ", ".join(f'"{c}"' for c in rule.source.series)
    if one_series_per_alert(rule):
        return _segments_sql(rule, group, series)
    return _per_step_sql(rule, group, series)


def _snapshot_columns(rules: list[CompiledRule]) -> str:
    """Only the columns the rules read: the views' dedupe then carries no other column."""
    source = rules[0].source
    names = {"cluster", source.time_column, *source.series}
    if source.prune_column:
        names.add(source.prune_column)
    for rule in rules:
        names.update(rule.by)
        if rule.metric is not None:
            names.add("metric")
        if rule.source.table != DEAD_LETTERS:
            names.add(rule.value_column)
        if (column := reason_column(rule)) is not None:
            names.add(column)
    return ", ".join(f'"{name}"' for name in sorted(names))


def _snapshot_where(table: str, rules: list[CompiledRule], clusters: Sequence[str]) -> str:
    """The rows of `table` any step in [$since, $until] can read, for these rules (a key-column filter).

    Every monitored cluster's rows (a literal list, so it goes down into the Parquet scan like
    `series_filter`'s); a cluster the lake still holds but the config no longer names is left out.
    """
    source = rules[0].source
    time_col = source.time_column
    lookback = max(r.lookback_s for r in rules)
    in_clusters = f"cluster IN ({', '.join(sql_literal(c) for c in clusters)})"
    where = f"{in_clusters} AND {time_col} <= $until AND {time_col} > $since - to_seconds({lookback!r})"
    if source.prune_column:
        where += f" AND {source.prune_column} > $since - to_seconds({lookback + source.prune_slack_s!r})"
    if table in METRIC_TABLES:
        metrics = sorted({r.metric for r in rules if r.metric})
        where += " AND metric IN (" + ", ".join(f"'{m}'" for m in metrics) + ")"
    return where


def _snapshot_sql(table: str, rules: list[CompiledRule], clusters: Sequence[str], only: str = "") -> str:
    columns = _snapshot_columns(rules)
    where = _snapshot_where(table, rules, clusters) + (f" AND {only}" if only else "")
    return f"CREATE OR REPLACE TEMP TABLE {snapshot_name(table)} AS SELECT {columns} FROM {table} WHERE {where}"


_SQL_OPS = {"==": "=", "!=": "<>"}


def may_pass_sql(rule: CompiledRule) -> str:
    """A row filter true on every row `passes` can accept (it may accept more: `passes` still judges)."""
    if rule.kind == "status":
        statuses = ", ".join(f"'{s}'" for s in STATUS_ORDER[status_rank(rule.level) :])
        return f"status IN ({statuses})"
    return f"{_value_expr(rule)} {_SQL_OPS.get(rule.op, rule.op)} CAST('{rule.threshold!r}' AS DOUBLE)"


def lake_files(lake: str | os.PathLike[str], table: str) -> str:
    """A table's Parquet files as written, before the views' newest-version dedupe.

    Why read them raw: a filter on a measure cannot go below the dedupe (an older version may
    pass where the newest does not), so over the view it would dedupe the whole table first.
    Raw, it is pushed into the Parquet scan, and what it finds is only used to pick series
    that are then read whole through the view.
    """
    glob = (table_dir(Path(lake).resolve(), table) / "*" / "*.parquet").as_posix()
    return f"read_parquet('{glob}', hive_partitioning = false, union_by_name = true)"


#: Past this many distinct values a series column is not worth a literal IN list (read it all).
MAX_IN_LIST = 5_000


def series_filter(con: Any, source: str, where: str, params: dict[str, Any], columns: list[str]) -> str:
    """`col IN (...) AND ...` over the values the rows matching `where` in `source` have.

    Keeps every row of each series with a matching row (and of a few others: the lists are
    per column), so window functions over a series see all its rows. Literal lists on the
    views' partition columns go below their dedupe into the Parquet scan.
    """
    found = con.execute(f"SELECT DISTINCT {', '.join(columns)} FROM {source} WHERE {where}", params).fetchall()
    if not found:
        return "false"
    parts = []
    for n, column in enumerate(columns):
        values = sorted({row[n] for row in found if row[n] is not None})
        if len(values) > MAX_IN_LIST:
            continue
        parts.append(f"{column} IN ({', '.join(sql_literal(v) for v in values)})" if values else "false")
    return " AND ".join(parts)


def sql_literal(value: Any) -> str:
    """A SQL literal of a string or number (quotes doubled), for IN lists DuckDB pushes into the scan."""
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    return repr(value)


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def _utc(ts: float) -> dt.datetime:
    """`ts` at the microsecond the grid's step arithmetic uses (`_micros`), not rounded apart from it."""
    return _EPOCH + dt.timedelta(microseconds=_micros(ts))


def _python_values(column: np.ndarray, picked: np.ndarray) -> list[Any]:
    """`column`'s values at `picked` as Python objects (a NULL as numpy gives it: masked)."""
    taken = column[picked]
    if np.ma.is_masked(taken):
        return list(taken)
    return np.asarray(taken).tolist()


def _texts(column: np.ndarray, picked: np.ndarray) -> list[str]:
    """`column`'s values at `picked` as label text (`str` of each, as a label is always text)."""
    return list(map(str, _python_values(column, picked)))


def _conditions(
    rule: CompiledRule,
    clusters: list[str],
    by_rows: Iterable[Sequence[str]],
    values: Iterable[float],
    reasons: list[str],
) -> list[Condition]:
    """One condition per row: the rule's labels, then the row's own, and what its text shows.

    The rule's part of the labels is built once and copied per row (a fleet's rules can hold
    for millions of series in one cycle); a label the rule sets itself wins over the row's
    cluster, and the row's `by` labels win over the rule's, in the same key order either way.
    """
    base = {"alertname": rule.name, "cluster": "", "severity": rule.severity, **rule.labels}
    row_cluster = "cluster" not in rule.labels
    out = []
    for cluster, by, value, reason in zip(clusters, by_rows, values, reasons, strict=True):
        labels = base.copy()
        if row_cluster:
            labels["cluster"] = cluster
        labels.update(zip(rule.by, by, strict=True))
        status = rule.value_text(value)
        if status is None:
            out.append(Condition(rule, labels, value, {"reason": reason}))
            continue
        # The status word is a label, as the `status` label of the Prometheus series: so a
        # group going from STALL to STOP is a new alert that says so, as in Prometheus. A
        # status reason starts with the word ("STOP: group empty …"), which {status} says.
        labels["status"] = status
        out.append(Condition(rule, labels, value, {"reason": reason.removeprefix(f"{status}: "), "status": status}))
    return out


class Evaluator:
    """Holds one read-only DuckDB session over the lake; `evaluate(now)` runs every rule once."""

    def __init__(self, config: Config, rules: list[CompiledRule], clusters: Sequence[str] | None = None) -> None:
        """`clusters`: whose rows count (default: every configured cluster)."""
        self.rules = rules
        self.every_s = config.alerts.evaluate_every_s
        self.clusters = list(clusters) if clusters is not None else [cluster.name for cluster in config.clusters]
        self.lake = config.resolve_path(config.lake.path)
        self._duckdb = config.resolve_path(config.lake.duckdb_path)
        self._con: Any = None
        self._evaluations = 0
        self._shapes: dict[str, list[CompiledRule]] = {}
        for rule in rules:
            self._shapes.setdefault(shape_sql(rule), []).append(rule)

    def connection(self) -> Any:
        """The session (opened on first use): backtests read other facts of the range through it."""
        if self._con is None:
            self._con = connect_readonly(self.lake, self._duckdb)
            self._con.execute("SET enable_progress_bar = false")
        return self._con

    def load(self, since: float, until: float) -> None:
        """Copy the rows any step in [since, until] can read, once per table.

        A table read only by rules of one series per alert keeps just the series on which
        some rule's condition can hold at some row: the others never raise anything, and most
        of a week's rows are healthy. Every row of a kept series stays, so `for` and the end
        of each condition come out as from the whole table.
        """
        by_table: dict[str, list[CompiledRule]] = {}
        for rule in self.rules:
            by_table.setdefault(rule.source.table, []).append(rule)
        params = {"since": _utc(since), "until": _utc(until)}
        for table, rules in by_table.items():
            only = ""
            if all(one_series_per_alert(r) for r in rules):
                may_pass = " OR ".join(sorted({may_pass_sql(r) for r in rules}))
                where = f"{_snapshot_where(table, rules, self.clusters)} AND ({may_pass})"
                labels = [f'"{c}"' for c in rules[0].source.series if c != "cluster"]
                only = series_filter(self.connection(), lake_files(self.lake, table), where, params, labels)
            self.connection().execute(_snapshot_sql(table, rules, self.clusters, only), params)

    def timelines(self, grid: Grid, strict: bool = False) -> list[Timeline]:
        """Every rule's true conditions over `grid`, read from the rows `load` copied.

        Live, a rule that fails is logged and the others still run; `strict` (a backtest)
        raises instead, since a report missing a rule would read as "it never fired".
        The cycle collector is paused meanwhile: a fleet's rules can hold for millions of series
        at once, and its passes over the growing heap of conditions would find nothing to free.
        """
        out: list[Timeline] = []
        with cyclic_gc_paused():
            for sql, rules in self._shapes.items():
                try:
                    out += self._shape_timelines(sql, rules, grid)
                except Exception:
                    if strict:
                        raise
                    log.exception("rules %s failed to evaluate", ", ".join(r.name for r in rules))
        return out

    def _shape_timelines(self, sql: str, rules: list[CompiledRule], grid: Grid) -> list[Timeline]:
        """Values first (one float column), then labels only of the rows some rule passes."""
        con = self.connection()
        # Numbered in a fixed order, so alerts starting at the same step are met in the same order
        # however many rows the snapshot held or the scan's threads returned first.
        order = ", ".join(["k_from", "cluster", *(f'"{b}"' for b in rules[0].by)])
        con.execute(f"CREATE OR REPLACE TEMP TABLE shape_rows AS SELECT row_number() OVER (ORDER BY {order}) AS i, * "
                    f"FROM ({sql})", grid.params())  # fmt: skip
        found = con.execute("SELECT i, value FROM shape_rows").fetchnumpy()
        ids, values = np.asarray(found["i"]), np.asarray(found["value"], dtype=float)
        masks = [passes(rule, values) for rule in rules]
        chosen = ids[np.logical_or.reduce(masks)] if masks else ids[:0]
        con.register("chosen_rows", pa.table({"i": chosen}))
        try:
            rows = con.execute(
                "SELECT * FROM shape_rows WHERE i IN (SELECT i FROM chosen_rows) ORDER BY i"
            ).fetchnumpy()
        finally:
            con.unregister("chosen_rows")
        # rows["i"] is ascending (ORDER BY i) and holds every chosen id: a sorted lookup finds each.
        chosen_ids = np.asarray(rows["i"])
        return [
            self._timeline(rule, rows, np.searchsorted(chosen_ids, ids[mask]))
            for rule, mask in zip(rules, masks, strict=True)
        ]

    @staticmethod
    def _timeline(rule: CompiledRule, rows: dict[str, np.ndarray], picked: np.ndarray) -> Timeline:
        """The rule's conditions at rows `picked` of `rows`.

        Each column is taken for the picked rows at once and turned into Python values in one
        call rather than read from numpy an element at a time: a fleet's rules can hold for
        millions of series in one cycle, and building their conditions is where that cost lands.
        (`by` labels are text and integer columns, whose `str` is the same either way.)
        """
        by_values = [_texts(rows[b], picked) for b in rule.by]
        conditions = _conditions(
            rule,
            _texts(rows["cluster"], picked),
            zip(*by_values, strict=True) if by_values else itertools.repeat((), len(picked)),
            map(float, _python_values(rows["value"], picked)),
            _texts(rows["reason"], picked),
        )
        k_from = np.asarray(rows["k_from"], dtype=np.int64)[picked]
        k_to = np.asarray(rows["k_to"], dtype=np.int64)[picked]
        return Timeline(rule, conditions, k_from, k_to)

    def evaluate(self, now: float) -> list[Condition]:
        """Conditions true at `now` (epoch seconds), one entry per series and rule.

        Every SESSION_EVALUATIONS evaluations the DuckDB session starts afresh (each evaluation
        loads what it reads, so nothing is lost): a session kept for good holds on to memory from
        every evaluation's temp tables, a slow climb of the long-running engine's RSS.
        """
        self._evaluations += 1
        if self._evaluations % SESSION_EVALUATIONS == 0:
            self.close()
        self.load(now, now)
        return [c for timeline in self.timelines(Grid(now, self.every_s, 1)) for c in timeline.at(0)]

    def close(self) -> None:
        if self._con is not None:
            self._con.close()
            self._con = None
