"""Burrow's v3 HTTP API over the snapshot: same paths, JSON shapes, messages and status codes.

Shapes follow Burrow's `core/internal/httpserver/structs.go` and `core/protocol` (field names
from their JSON tags), messages and codes its `kafka.go` handlers, group evaluation its
`core/internal/evaluator/caching.go`:

- a group's status is the worst partition status, anything past WARN reported as ERR;
- `/status` lists only partitions worse than OK, `/lag` lists all of them;
- `maxlag` is the partition with the highest `current_lag` (the first one seen on a tie);
- `complete` per partition is the share of the commit window (`[lag] window_s`, one lake row
  per minute) the lake has rows for; a group's is the share of its partitions that are complete;
- an unknown cluster or group answers 404 with status NOTFOUND, as Burrow's evaluator does;
- a group Lagwatch judged ERR (its cluster could not be read) has no current lag: its offsets'
  `lag` is null and `end` null (Burrow's "unknown"), `current_lag` 0 (Burrow's uint64 has no
  unknown), its status ERR (partitions STOP), and the response's `message` is the status
  reason, where Burrow puts the evaluator's own explanation.

Lagwatch's statuses become Burrow's through `api.statuses` (the one mapping table).
"""

from __future__ import annotations

import math
import socket
from typing import Any

from api import statuses
from api.snapshot import Snapshot

Body = dict[str, Any]
HOSTNAME = socket.gethostname()
#: Burrow's catch-all answer for an unknown path (written as text, status 404).
NOT_FOUND_BODY = '{"error":true,"message":"invalid request type","result":{}}'


def _request(path: str) -> Body:
    return {"url": path, "host": HOSTNAME}


def _ok(path: str, message: str, **payload: Any) -> tuple[int, Body]:
    return 200, {"error": False, "message": message, **payload, "request": _request(path)}


def error(path: str, status: int, message: str) -> tuple[int, Body]:
    return status, {"error": True, "message": message, "request": _request(path)}


def cluster_list(snap: Snapshot, path: str) -> tuple[int, Body]:
    return _ok(path, "cluster list returned", clusters=snap.clusters)


def cluster_detail(
    snap: Snapshot, path: str, cluster: str, servers: dict[str, list[str]], refresh_s: float
) -> tuple[int, Body]:
    """`servers`: each configured cluster's bootstrap servers; a cluster only the lake still knows
    (since removed from the config) has none."""
    if cluster not in snap.clusters:
        return error(path, 404, "cluster module not found")
    module = {
        "class-name": "kafka",
        "servers": servers.get(cluster, []),
        "client-profile": {"name": "lagwatch", "client-id": "lagwatch", "kafka-version": "", "tls": None, "sasl": None},
        "topic-refresh": int(refresh_s),
        "offset-refresh": int(refresh_s),
    }
    return _ok(path, "cluster module detail returned", module=module)


def consumer_list(snap: Snapshot, path: str, cluster: str) -> tuple[int, Body]:
    if cluster not in snap.clusters:
        return error(path, 404, "cluster not found")
    return _ok(path, "consumer list returned", consumers=snap.consumers(cluster))


def topic_list(snap: Snapshot, path: str, cluster: str) -> tuple[int, Body]:
    if cluster not in snap.clusters:
        return error(path, 404, "cluster not found")
    return _ok(path, "topic list returned", topics=snap.topics(cluster))


def topic_detail(snap: Snapshot, path: str, cluster: str, topic: str) -> tuple[int, Body]:
    """Offsets indexed by partition id (Burrow's []int64); a partition with no offset reads 0."""
    offsets = snap.topic_offsets.get((cluster, topic))
    if not offsets:
        return error(path, 404, "cluster or topic not found")
    dense = [offsets.get(p, 0) for p in range(max(offsets) + 1)]
    return _ok(path, "topic offsets returned", offsets=dense)


def topic_consumers(snap: Snapshot, path: str, cluster: str, topic: str) -> tuple[int, Body]:
    if cluster not in snap.clusters:
        return error(path, 404, "cluster not found")
    return _ok(path, "consumers of topic returned", consumers=snap.consumers_of_topic(cluster, topic))


def _offset(offset: int | None, at_ms: int | None, lag: int | None) -> Body | None:
    if offset is None:
        return None
    return {"offset": offset, "timestamp": at_ms or 0, "observedAt": at_ms or 0, "lag": _lag(lag)}


def _lag(value: int | None) -> int | None:
    return None if value is None else max(0, int(value))


def _complete(row: dict[str, Any], window_rows_expected: int) -> float:
    return min(1.0, row["window_rows"] / window_rows_expected) if window_rows_expected else 1.0


def _partition_status(row: dict[str, Any], window_rows_expected: int) -> Body:
    end = _offset(row["committed_offset"], row["end_ms"], row["lag"])
    start = _offset(row["start_offset"], row["start_ms"], row["start_lag"]) if row["start_offset"] is not None else end
    return {
        "topic": row["topic"],
        "partition": row["partition"],
        "owner": "",
        "client_id": "",
        "status": statuses.burrow_partition_status(row["status"]),
        "start": start,
        "end": end,
        "current_lag": _lag(row["lag"]) or 0,
        "complete": _complete(row, window_rows_expected),
    }


def group_status(snap: Snapshot, cluster: str, group: str) -> Body | None:
    """Burrow's ConsumerGroupStatus with every partition (memoized per snapshot); None if unknown."""
    key = ("burrow-status", cluster, group)
    if key in snap.memo:
        return snap.memo[key]
    rows = snap.by_group.get((cluster, group))
    if rows is None:
        return None
    expected = max(1, math.ceil(snap.commit_window_s / 60))
    partitions = [_partition_status(r, expected) for r in rows]
    maxlag = None
    for p in partitions:
        if maxlag is None or p["current_lag"] > maxlag["current_lag"]:
            maxlag = p
    complete = sum(p["complete"] == 1.0 for p in partitions) / len(partitions) if partitions else 0.0
    body = {
        "cluster": cluster,
        "group": group,
        "status": statuses.burrow_group_status([p["status"] for p in partitions]),
        "complete": complete,
        "partitions": partitions,
        "partition_count": len(partitions),
        "maxlag": maxlag,
        "totallag": sum(p["current_lag"] for p in partitions),
    }
    snap.memo[key] = body
    return body


def message_for(snap: Snapshot, cluster: str, group: str, default: str) -> str:
    """`default`, or the group's reason when Lagwatch judged it ERR (its lag is not known: say why)."""
    row = snap.groups.get((cluster, group))
    return row["reason"] if row is not None and row["status"] == "ERR" and row["reason"] else default


def consumer_status(snap: Snapshot, path: str, cluster: str, group: str, show_all: bool) -> tuple[int, Body]:
    """`/status` (partitions worse than OK) and `/lag` (all partitions); NOTFOUND is a 404 with error false."""
    full = group_status(snap, cluster, group)
    if full is None:
        status: Body = {
            "cluster": cluster,
            "group": group,
            "status": "NOTFOUND",
            "complete": 1.0,
            "partitions": [],
            "partition_count": 0,
            "maxlag": None,
            "totallag": 0,
        }
        code = 404
    else:
        status = full if show_all else {**full, "partitions": [p for p in full["partitions"] if p["status"] != "OK"]}
        code = 200
    message = message_for(snap, cluster, group, "consumer status returned")
    return code, {"error": False, "message": message, "status": status, "request": _request(path)}


def consumer_detail(snap: Snapshot, path: str, cluster: str, group: str) -> tuple[int, Body]:
    """Burrow's ConsumerTopics: per topic, a list indexed by partition id (null where the group has none).

    Burrow keeps every commit of its window; the lake keeps one row per minute, so `offsets`
    holds the oldest row of the commit window and the newest (one entry when they are the same).
    """
    rows = snap.by_group.get((cluster, group))
    if rows is None:
        return error(path, 404, "cluster or consumer not found")
    topics: dict[str, list[Body | None]] = {}
    for row in rows:
        per_topic = topics.setdefault(row["topic"], [])
        per_topic.extend([None] * (row["partition"] + 1 - len(per_topic)))
        end = _offset(row["committed_offset"], row["end_ms"], row["lag"])
        start = _offset(row["start_offset"], row["start_ms"], row["start_lag"])
        offsets = [o for o in (start, end) if o is not None]
        if len(offsets) == 2 and offsets[0]["timestamp"] == offsets[1]["timestamp"]:
            offsets = offsets[1:]
        per_topic[row["partition"]] = {
            "offsets": offsets,
            "owner": "",
            "client_id": "",
            "current-lag": _lag(row["lag"]) or 0,
        }
    return _ok(path, message_for(snap, cluster, group, "consumer detail returned"), topics=topics)
