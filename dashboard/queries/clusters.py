"""Which clusters there are (the sidebar's picker) and the All clusters page: every cluster's
groups by status, its targets up and the age of its newest data, whichever cluster is picked."""

from __future__ import annotations

import datetime as dt
import math
from typing import Any

import pandas as pd

from dashboard.queries import JMX, RECENT, RECENT_LOOKBACK, TARGETS, UP, Frames, Lake, Scope, between, run, session
from lagwatch import vocabulary
from lagwatch.lake_queries import newest_rows

#: Clusters with rows since $since: the bound on a key column (a macro's for pipeline_progress)
#: reaches the Parquet scan, so the picker reads the last hour of files, not every group's every
#: minute of the whole retention through the views' dedupe (a cost that grows with fleet and retention).
_SINCE = ("$since", "'infinity'")
SQL_CLUSTERS = (
    f"SELECT DISTINCT cluster FROM {between('group_status', _SINCE)} "
    "UNION SELECT DISTINCT cluster FROM pipeline_progress_since($since)"
)

#: Every cluster's groups, newest status each (not-OK ones are listed).
SQL_ALL_GROUPS_LATEST = newest_rows(
    between("group_status", ("$recent_start - INTERVAL 1 MINUTE", "$end")),
    "cluster, group_id, status, reason, total_lag, updated_at",
    key="cluster, group_id",
    where="updated_at >= $recent_start AND updated_at < $end",
    newest_by="updated_at",
)

#: Every cluster's scrape targets, newest `up` each, and each cluster's newest metrics window.
SQL_ALL_TARGETS_LATEST = f"""
SELECT cluster, source, broker, client_id, arg_max_null("last", window_start) AS up
FROM {between("metrics_1m", RECENT)}
WHERE metric = '{UP}' AND source IN {TARGETS}
GROUP BY ALL
"""

SQL_ALL_NEWEST_DATA = f"""
SELECT cluster, max(newest) AS newest FROM (
  SELECT cluster, max(window_end) AS newest FROM {between("metrics_1m", RECENT)} GROUP BY cluster
  UNION ALL
  SELECT cluster, max(updated_at) FROM {between("group_status", ("$recent_start - INTERVAL 1 MINUTE", "$end"))}
  WHERE updated_at < $end
  GROUP BY cluster
) GROUP BY cluster
"""


def names(lake: Lake) -> list[str]:
    """Cluster names with rows in the lake in the last hour (for the selector, beside the configured ones)."""
    since = dt.datetime.now(dt.UTC) - RECENT_LOOKBACK
    with session(lake) as con:
        return sorted(run(con, SQL_CLUSTERS, since=since)["cluster"].dropna().tolist())


def configured_first(configured: list[str], found: list[str]) -> list[str]:
    """Every configured cluster (config order), then any other ``found`` in the lake, sorted."""
    return [*configured, *sorted({str(name) for name in found} - set(configured))]


def load(lake: Lake, scope: Scope, configured: list[str]) -> Frames:
    """The All clusters page: one row per cluster (``configured`` first, then any other in the
    lake) and every cluster's groups that are not OK. ``scope.cluster`` is not used."""
    with session(lake) as con:
        p = scope.params()
        groups = run(con, SQL_ALL_GROUPS_LATEST, **p)
        targets = run(con, SQL_ALL_TARGETS_LATEST, **p)
        newest_data = run(con, SQL_ALL_NEWEST_DATA, **p)
    found = [*groups["cluster"], *targets["cluster"], *newest_data["cluster"]]
    clusters = configured_first(configured, found)
    not_ok = groups[groups["status"] != vocabulary.STATUS_ORDER[0]].copy()
    not_ok["severity"] = [vocabulary.STATUS_SEVERITY.get(status, 0) for status in not_ok["status"]]
    not_ok = not_ok.sort_values(["severity", "cluster", "group_id"], ascending=[False, True, True])
    return {
        "clusters": _cluster_rows(clusters, groups, targets, newest_data, scope.end),
        "not_ok": not_ok.drop(columns="severity").reset_index(drop=True),
    }


def _cluster_rows(
    clusters: list[str], groups: pd.DataFrame, targets: pd.DataFrame, newest_data: pd.DataFrame, end: dt.datetime
) -> pd.DataFrame:
    """Per cluster: its groups counted by status (a column per status), brokers and targets up
    ("2 of 3"), and the age in seconds of its newest data (NaN: none in the recent slice)."""
    counts = groups.groupby(["cluster", "status"]).size()
    newest = dict(zip(newest_data["cluster"], newest_data["newest"], strict=True))
    rows = []
    for name in clusters:
        mine = targets[targets["cluster"] == name]
        brokers = mine[mine["source"].isin(JMX) & mine["broker"].notna()]
        row: dict[str, Any] = {"cluster": name}
        row |= {status: int(counts.get((name, status), 0)) for status in vocabulary.STATUS_ORDER}
        row["brokers_up"] = _up_of(brokers["up"])
        row["targets_up"] = _up_of(mine["up"])
        seen = newest.get(name)
        row["data_age_s"] = (end - seen).total_seconds() if seen is not None and not pd.isna(seen) else math.nan
        rows.append(row)
    return pd.DataFrame(rows, columns=["cluster", *vocabulary.STATUS_ORDER, "brokers_up", "targets_up", "data_age_s"])


def _up_of(up: pd.Series) -> str:
    """'2 of 3': targets whose newest `up` is 1, of those that reported; '–' when none did."""
    return f"{int((up >= 1).sum())} of {len(up)}" if len(up) else "–"
