"""`/healthz` (the process answers) and `/readyz` (the lake is fresh), as JSON.

Ready means: the newest thing the lake measured (a group status, written with its lag rows, or
a Spark progress report) is at most `[api] ready_max_age_s` old, judged on a snapshot at most
`[api] cache_s` old (server.py), and the last lake read succeeded. Each
component that reported in the last hour is listed with its age and whether it is within the
bound, so `lagwatch status` can say which one went quiet; a quiet component alone does not
make the API unready (a collector instance scaled away would otherwise hold it down for an hour).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from api.snapshot import Snapshot


def _age(now: dt.datetime, then: dt.datetime | None) -> float | None:
    return None if then is None else max(0.0, (now - then).total_seconds())


def _component(now: dt.datetime, last_seen: dt.datetime | None, bound_s: float) -> dict[str, Any]:
    age = _age(now, last_seen)
    return {
        "last_seen": None if last_seen is None else last_seen.isoformat(),
        "age_s": None if age is None else round(age, 3),
        "ok": age is not None and age <= bound_s,
    }


def readiness(snap: Snapshot | None, now: dt.datetime, bound_s: float, last_error: str | None) -> dict[str, Any]:
    components: dict[str, Any] = {}
    if snap is not None:
        for row in snap.pipeline:
            components[f"spark:{row['query']}@{row['cluster']}"] = _component(now, row["ts"], bound_s)
        for row in snap.collectors:
            components[f"collector:{row['collector']}@{row['cluster']}"] = _component(now, row["last_seen"], bound_s)
    lake = _component(now, None if snap is None else snap.newest_data(), bound_s)
    ready = lake["ok"] and last_error is None
    return {
        "ready": ready,
        "max_age_s": bound_s,
        "lake": lake,
        "components": components,
        "snapshot_at": None if snap is None else snap.taken_at.isoformat(),
        "error": last_error,
    }
