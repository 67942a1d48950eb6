"""What keeps the pages cheap at fleet size keeps what they show: the status timeline's points per
chart bucket, and a topic's consumers read for that topic alone.

Rows are written by the lake's own writer and read through the real views; expected values are
computed here from the rows written, never from the dashboard's SQL.
"""

from __future__ import annotations

import datetime as dt

import pytest

from dashboard.queries import Lake, Scope
from dashboard.queries import groups as group_queries
from dashboard.queries import topics as topic_queries
from lagwatch import lake as lakelib
from lagwatch.config import load_config
from tests.dashboard.conftest import CLUSTER, KnownLake, newest

UTC = dt.UTC
GROUP = "g"
END = dt.datetime(2026, 3, 4, 10, 27, tzinfo=UTC)
#: Minute rows over the last six hours of the range.
MINUTES = 6 * 60


def _status_row(minute: int) -> dict:
    start = END - dt.timedelta(minutes=MINUTES - minute)
    status = "STOP" if minute % 13 == 0 else "WARN" if minute % 5 == 0 else "OK"
    return {
        "cluster": "c",
        "group_id": GROUP,
        "status": status,
        "reason": f"{status} at minute {minute}",
        "total_lag": (minute * 7919) % 1000,
        "window_start": start,
        "updated_at": start + dt.timedelta(seconds=30),
    }


@pytest.fixture(scope="module")
def status_lake(tmp_path_factory: pytest.TempPathFactory) -> tuple[Lake, list[dict]]:
    root = tmp_path_factory.mktemp("status-history")
    lake = root / "lake"
    lakelib.ensure_lake(lake)
    rows = [_status_row(m) for m in range(MINUTES)]
    lakelib.write_rows(lake, "group_status", lakelib.rows_to_arrow("group_status", rows), "batch-1")
    views = root / "lagwatch.duckdb"
    lakelib.write_views_file(lake, views)
    return Lake(lake, views), rows


def _history(lake: Lake, span: dt.timedelta) -> tuple[Scope, list[tuple]]:
    scope = Scope("c", END - span, END)
    with group_queries.session(lake) as con:
        frame = group_queries.run(con, group_queries.SQL_GROUP_STATUS_HISTORY, group=GROUP, **scope.params())
    return scope, list(frame.itertuples(index=False, name=None))


def test_a_week_of_status_has_one_point_per_bucket_and_status_at_its_first_minute(
    status_lake: tuple[Lake, list[dict]],
) -> None:
    lake, rows = status_lake
    scope, shown = _history(lake, dt.timedelta(days=7))
    assert scope.bucket_s > 60, "a week's bucket spans several minutes"
    expected: dict[tuple[int, str], dict] = {}
    for row in sorted(rows, key=lambda r: r["updated_at"]):
        bucket = int(row["updated_at"].timestamp()) // scope.bucket_s
        first = expected.setdefault((bucket, row["status"]), dict(row))
        first["total_lag"] = max(first["total_lag"], row["total_lag"])
    want = sorted(
        ((r["updated_at"], r["status"], r["reason"], r["total_lag"]) for r in expected.values()),
        key=lambda t: (t[0], t[1]),
    )
    assert [(t.to_pydatetime(), s, reason, lag) for t, s, reason, lag in shown] == want
    assert len(shown) < len(rows)
    assert {s for _, s, _, _ in shown} == {"OK", "WARN", "STOP"}


def test_an_hour_of_status_keeps_every_minute_row(status_lake: tuple[Lake, list[dict]]) -> None:
    lake, rows = status_lake
    scope, shown = _history(lake, dt.timedelta(hours=1))
    inside = [r for r in rows if scope.start <= r["updated_at"] < scope.end]
    assert [(t.to_pydatetime(), s, reason, lag) for t, s, reason, lag in shown] == [
        (r["updated_at"], r["status"], r["reason"], r["total_lag"]) for r in inside
    ]


def test_a_topics_consumers_are_its_groups_alone(known_lake: KnownLake) -> None:
    lake = Lake.from_config(load_config(known_lake.config_path))
    scope = Scope(CLUSTER, known_lake.now - dt.timedelta(hours=1), dt.datetime.now(UTC) + dt.timedelta(minutes=1))
    lag = [r for r in known_lake.rows["lag_1m"] if r.get("cluster", CLUSTER) == CLUSTER]
    topics = sorted({r["topic"] for r in lag})
    assert len(topics) > 1, "the known lake has several consumed topics"
    for topic in topics:
        consumers = topic_queries.detail(lake, scope, topic)["groups"]
        newest_lag = newest([r for r in lag if r["topic"] == topic], ("group_id", "partition"), ("window_start",))
        expected = {
            g: sum(r["lag"] for r in newest_lag if r["group_id"] == g) for g in {r["group_id"] for r in newest_lag}
        }
        assert set(consumers["topic"]) == {topic}
        assert dict(zip(consumers["group_id"], consumers["total_lag"], strict=True)) == expected
