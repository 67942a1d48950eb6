"""The alerts page's backtest panel: the metric a rule reads, for the label sets its would-be
alerts carry."""

from __future__ import annotations

from typing import Any

import pandas as pd

from dashboard.queries import Lake, Scope, run, session
from lagwatch import lake as lakelib
from lagwatch import vocabulary

#: At most this many label sets are drawn under a backtest's alerts.
BACKTEST_SERIES = 8


def _rule_value_sql(reads: dict[str, Any]) -> str:
    """The value expression of a rule's column; statuses as their rank in the vocabulary's order."""
    if reads["column"] == "status":
        whens = " ".join(f"WHEN '{s}' THEN {i}" for i, s in enumerate(vocabulary.STATUS_ORDER))
        return f"(CASE status {whens} END)"
    return f'CAST("{reads["column"]}" AS DOUBLE)'


def series(lake: Lake, scope: Scope, reads: dict[str, Any], label_sets: list[dict[str, str]]) -> pd.DataFrame:
    """(time, series, value): the rule's column per `by` label set, reduced like the rule, bucketed.

    Table and column names come from the backtest report and are checked against the lake
    contract before they reach the SQL text; label values are bound parameters.
    """
    spec = lakelib.table(reads["table"])
    names = set(spec.column_names)
    by = [b for b in reads["by"] if b in names]
    if reads["time_column"] not in names or (reads["column"] not in names and reads["column"] != "count"):
        return pd.DataFrame(columns=["time", "series", "value"])
    value = "1.0" if reads["column"] == "count" else _rule_value_sql(reads)
    reduce = {"max": "max", "min": "min", "sum": "sum", "avg": "avg"}.get(reads.get("reduce"), "max")
    time_col = reads["time_column"]
    where = [f"cluster = $cluster AND {time_col} >= $start AND {time_col} < $end"]
    params: dict[str, Any] = {**scope.params()}
    if reads.get("metric") and "metric" in names:
        where.append("metric = $metric")
        params["metric"] = reads["metric"]
    chosen = label_sets[:BACKTEST_SERIES]
    for i, label in enumerate(by):
        values = sorted({s.get(label, "") for s in chosen})
        if values:
            name = f"labels_{chr(ord('a') + i)}"  # $names are letters only (see `run`)
            where.append(f'CAST("{label}" AS VARCHAR) IN (SELECT unnest(${name}))')
            params[name] = values
    series_sql = " || ' ' || ".join(f"'{b}=' || CAST(\"{b}\" AS VARCHAR)" for b in by) or "cluster"
    sql = (
        f"SELECT time_bucket(to_seconds($bucket_s), {time_col}) AS time, {series_sql} AS series, "
        f"{reduce}({value}) AS value FROM {spec.name} WHERE {' AND '.join(where)} GROUP BY ALL ORDER BY time"
    )
    with session(lake) as con:
        return run(con, sql, **params)
