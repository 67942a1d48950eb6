"""A lake of 250 consumer groups for the groups page's paging and filters.

Why its own lake: the known lake (conftest.py) holds a handful of groups, all on one page. Here
most groups are OK and a few are not, so worst-first order, pages, search and the status, type
and topic filters each keep a different, known set. Rows go through the lake's own writer
(`lagwatch.lake.write_rows`), as the Spark job writes them, and every expected id list is derived
from `FLEET` with the page's rules (worst status, then most lag, then group id), never typed in.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lagwatch import vocabulary
from shell.broker import free_port
from tests.dashboard.conftest import KnownLake, write_lake

CLUSTER = "fleet"
#: Another cluster in the same lake: its group shares an id with one of ours and must never show.
OTHER_CLUSTER = "fleet-eu"
NUMBERED = 249
#: Not OK: a few of each, spread over the pages.
STATUSES = {5: "STOP", 140: "STOP", 77: "STOP", 10: "STALL", 123: "STALL", 3: "WARN", 99: "WARN", 200: "WARN"}
#: The small topic: consumed by these groups (besides their own).
AUDITORS = (12, 131, 242)
#: A group whose id holds an underscore: a search for "_" is a plain substring, not a LIKE pattern.
ODD_ID = "legacy_app"


@dataclass(frozen=True)
class Group:
    group_id: str
    status: str
    total_lag: int
    topics: tuple[str, ...]
    group_type: str
    consume_rate: float


def _group(i: int) -> Group:
    team = "orders" if i % 2 == 0 else "billing"
    topics = ("orders",) if i % 2 == 0 else ("payments",)
    if i in AUDITORS:
        topics = tuple(sorted((*topics, "audit")))
    return Group(
        group_id=f"{team}-consumer-{i:03d}",
        status=STATUSES.get(i, "OK"),
        total_lag=(i * 37) % 1000,
        topics=topics,
        group_type="consumer" if i % 10 == 0 else "classic",
        consume_rate=float(i),
    )


FLEET: tuple[Group, ...] = (
    *(_group(i) for i in range(NUMBERED)),
    Group(ODD_ID, "OK", 0, ("orders",), "classic", 1.5),
)


def worst_first(groups: list[Group] | tuple[Group, ...]) -> list[str]:
    """The page's order: worst status first, then the most lag, then the group id."""
    rank = {name: -severity for name, severity in vocabulary.STATUS_SEVERITY.items()}
    return [g.group_id for g in sorted(groups, key=lambda g: (rank[g.status], -g.total_lag, g.group_id))]


def _status_row(g: Group, cluster: str, ts: dt.datetime, status: str, version: int) -> dict[str, Any]:
    return {
        "cluster": cluster,
        "group_id": g.group_id,
        "status": status,
        "reason": f"{status.lower()} in the fleet",
        "rule": "burrow",
        "total_lag": g.total_lag,
        "max_lag": g.total_lag,
        "max_time_lag_s": g.total_lag / 10,
        "max_time_lag_method": "interpolated",
        "partitions": len(g.topics),
        "topics": ",".join(g.topics),
        "group_state": "Stable",
        "members": 1,
        "rebalances": 0,
        "group_type": g.group_type,
        "window_start": ts.replace(second=0, microsecond=0),
        "updated_at": ts,
        "version": version,
    }


def _lag_row(g: Group, cluster: str, ts: dt.datetime, topic: str) -> dict[str, Any]:
    lag = g.total_lag // len(g.topics)
    return {
        "cluster": cluster,
        "window_start": ts,
        "window_end": ts + dt.timedelta(minutes=1),
        "group_id": g.group_id,
        "topic": topic,
        "partition": 0,
        "committed_offset": 100_000 - lag,
        "end_offset": 100_000,
        "lag": lag,
        "lag_max": lag,
        "consume_rate": g.consume_rate / len(g.topics),
        "produce_rate": 1.0,
        "time_lag_s": lag / 10,
        "time_lag_method": "interpolated",
        "eta_s": 60.0,
        "rate_span_s": 60.0,
        "status": g.status,
        "reason": "fleet",
        "group_type": g.group_type,
        "version": 1,
    }


def _rows(now: dt.datetime) -> dict[str, list[dict[str, Any]]]:
    """Every group now; twenty minutes ago every not-OK group was OK (the newest row must win);
    the other cluster's group shares an id with a STOP group of ours but is LOSS."""
    t, earlier = now - dt.timedelta(minutes=2), now - dt.timedelta(minutes=20)
    shared = next(g for g in FLEET if g.status == "STOP")
    status = [
        *(_status_row(g, CLUSTER, t, g.status, 2) for g in FLEET),
        *(_status_row(g, CLUSTER, earlier, "OK", 1) for g in FLEET if g.status != "OK"),
        _status_row(shared, OTHER_CLUSTER, t, "LOSS", 2),
    ]
    lag = [
        _lag_row(g, CLUSTER, ts, topic) for g in FLEET for topic in g.topics for ts in (t, t - dt.timedelta(minutes=1))
    ]
    return {"group_status": status, "lag_1m": [*lag, _lag_row(shared, OTHER_CLUSTER, t, shared.topics[0])]}


def build_fleet_lake(root: Path) -> KnownLake:
    """The fleet's lake, its views file and a config naming both clusters (the page shows one at a time)."""
    now = dt.datetime.now(dt.UTC).replace(second=0, microsecond=0)
    rows = _rows(now)
    lake_dir, views = write_lake(root, rows, "fleet")
    port = free_port()
    config_path = root / "config.toml"
    config_path.write_text(
        f'[[clusters]]\nname = "{CLUSTER}"\nbootstrap_servers = "127.0.0.1:9"\n\n'
        f'[[clusters]]\nname = "{OTHER_CLUSTER}"\nbootstrap_servers = "127.0.0.1:19"\n\n'
        f'[lake]\npath = "{lake_dir.as_posix()}"\nduckdb_path = "{views.as_posix()}"\n\n'
        f'[dashboard]\nhost = "127.0.0.1"\nport = {port}\nrefresh_s = 300\n\n[alerts]\nrun = false\n'
    )
    return KnownLake(root=root, config_path=config_path, port=port, now=now, rows=rows)
