"""Evaluate compiled rules over the lake: which alert conditions hold at time `now`.

Why a snapshot first: the views dedupe the whole table (newest version per key), so 500 rules
each scanning seven days would read the lake 500 times. Each cycle copies only the recent
slice of each table the rules need (the time filter is on a key column, so DuckDB pushes it
below the dedup into the Parquet scan) into a TEMP table, and then runs at most one small
query per rule against it: rules that differ only in threshold, op, level or text share one
query, and numpy picks each rule's series from its values. Every rule of a cycle sees the
same data. Only rows of this engine's cluster (`[cluster] name`) count: one leader per cluster.

`now` is injectable: rows newer than `now` are ignored, so tests move time by writing rows.
"""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from alerts.rules import DEAD_LETTERS, METRIC_TABLES, CompiledRule
from lagwatch.config import Config
from lagwatch.lake import connect_readonly
from lagwatch.vocabulary import STATUS_ORDER, status_rank

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Condition:
    """One series for which a rule's condition holds now."""

    rule: CompiledRule
    labels: dict[str, str]
    value: float
    extra: dict[str, Any] = field(default_factory=dict)


def _snapshot_name(table: str) -> str:
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
    """Rows of this rule's series (by-labels present) inside its lookback, up to $now."""
    time_col = rule.source.time_column
    parts = [f"{time_col} <= $now", f"{time_col} > $now - to_seconds({float(rule.lookback_s)!r})"]
    if rule.metric is not None:
        quoted = rule.metric.replace("'", "''")
        parts.append(f"metric = '{quoted}'")
    parts += [f'"{label}" IS NOT NULL' for label in rule.by]
    return " AND ".join(parts)


def shape_sql(rule: CompiledRule) -> str:
    """The query behind a rule: every series' current value as (cluster, by-labels..., value, reason).

    Rules that differ only in op, threshold, level, severity or text share the same query
    text, so it runs once per cycle for all of them; `passes` then picks each rule's series.
    """
    table = _snapshot_name(rule.source.table)
    time_col = rule.source.time_column
    where = _filters(rule)
    group = ", ".join(["cluster", *(f'"{b}"' for b in rule.by)])
    if rule.source.table == DEAD_LETTERS:
        per = "1.0" if rule.kind != "rate" else f"{rule.window_s!r}"
        return f"SELECT {group}, count(*) / {per} AS value, '' AS reason FROM {table} WHERE {where} GROUP BY ALL"
    if rule.kind == "absence":
        since = f"epoch($now) - epoch(max({time_col}))"
        return f"SELECT {group}, {since} AS value, '' AS reason FROM {table} WHERE {where} GROUP BY ALL"
    series = ", ".join(f'"{c}"' for c in rule.source.series)
    value = _value_expr(rule)
    if rule.kind == "rate":
        latest = (
            f"(arg_max({value}, {time_col}) - arg_min({value}, {time_col})) / "
            f"nullif(epoch(max({time_col})) - epoch(min({time_col})), 0) AS v, NULL AS reason"
        )
        window = f" AND {time_col} > $now - to_seconds({rule.window_s!r}) AND {value} IS NOT NULL"
    else:
        # The newest row's value even when NULL (then the series has no current value): a plain
        # arg_max skips NULLs and would bring back an older row's, e.g. a stale eta_s.
        reason = f"arg_max_null(reason, {time_col})" if rule.value_column == "status" else "NULL"
        latest = f"arg_max_null({value}, {time_col}) AS v, {reason} AS reason"
        window = ""
    return (
        f"WITH latest AS (SELECT {series}, {latest} FROM {table} WHERE {where}{window} "
        f"GROUP BY {series}) "
        f"SELECT {group}, {rule.reduce}(v) AS value, coalesce(arg_max(reason, v), '') AS reason "
        f"FROM latest WHERE v IS NOT NULL GROUP BY ALL"
    )


def _snapshot_sql(table: str, rules: list[CompiledRule]) -> str:
    source = rules[0].source
    time_col = source.time_column
    lookback = max(r.lookback_s for r in rules)
    where = f"cluster = $cluster AND {time_col} <= $now AND {time_col} > $now - to_seconds({lookback!r})"
    if source.prune_column:
        where += f" AND {source.prune_column} > $now - to_seconds({lookback + source.prune_slack_s!r})"
    if table in METRIC_TABLES:
        metrics = sorted({r.metric for r in rules if r.metric})
        where += " AND metric IN (" + ", ".join(f"'{m}'" for m in metrics) + ")"
    return f"CREATE OR REPLACE TEMP TABLE {_snapshot_name(table)} AS SELECT * FROM {table} WHERE {where}"


class Evaluator:
    """Holds one read-only DuckDB session over the lake; `evaluate(now)` runs every rule once."""

    def __init__(self, config: Config, rules: list[CompiledRule]) -> None:
        self.rules = rules
        self._cluster = config.cluster.name
        self._lake = config.resolve_path(config.lake.path)
        self._duckdb = config.resolve_path(config.lake.duckdb_path)
        self._con: Any = None
        self._shapes: dict[str, list[CompiledRule]] = {}
        for rule in rules:
            self._shapes.setdefault(shape_sql(rule), []).append(rule)

    def _connection(self) -> Any:
        if self._con is None:
            self._con = connect_readonly(self._lake, self._duckdb)
            self._con.execute("SET enable_progress_bar = false")
        return self._con

    def evaluate(self, now: float) -> list[Condition]:
        """Conditions true at `now` (epoch seconds), one entry per series and rule."""
        con = self._connection()
        at = dt.datetime.fromtimestamp(now, dt.UTC)
        by_table: dict[str, list[CompiledRule]] = {}
        for rule in self.rules:
            by_table.setdefault(rule.source.table, []).append(rule)
        for table, rules in by_table.items():
            con.execute(_snapshot_sql(table, rules), {"now": at, "cluster": self._cluster})
        conditions: list[Condition] = []
        for sql, rules in self._shapes.items():
            try:
                result = con.execute(sql, {"now": at} if "$now" in sql else None).fetchnumpy()
            except Exception:
                log.exception("rules %s failed to evaluate", ", ".join(r.name for r in rules))
                continue
            for rule in rules:
                conditions.extend(self._conditions(rule, result))
        return conditions

    @staticmethod
    def _conditions(rule: CompiledRule, result: dict[str, np.ndarray]) -> list[Condition]:
        values = np.asarray(result["value"], dtype=float)
        out = []
        for i in np.flatnonzero(passes(rule, values)):
            labels = {"alertname": rule.name, "cluster": str(result["cluster"][i]), "severity": rule.severity}
            labels.update(rule.labels)
            labels.update({b: str(result[b][i]) for b in rule.by})
            value = float(values[i])
            extra: dict[str, Any] = {"reason": str(result["reason"][i])}
            if rule.kind == "status":
                extra["status"] = STATUS_ORDER[int(value)]
            out.append(Condition(rule, labels, value, extra))
        return out

    def close(self) -> None:
        if self._con is not None:
            self._con.close()
            self._con = None
