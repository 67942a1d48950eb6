"""The groups page's SQL on real Parquet files through the real views: one page at a time, worst
first, filtered in SQL, with rates for the page's groups only, and a drill-down that reads one group.

Expected ids come from tests/dashboard/fleet_lake.py's FLEET with the page's order rules.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest

from dashboard.queries import Lake, Scope, bind
from dashboard.queries import groups as group_queries
from dashboard.queries.groups import GroupFilter
from lagwatch import lake as lakelib
from tests.dashboard.conftest import KnownLake
from tests.dashboard.fleet_lake import AUDITORS, CLUSTER, FLEET, ODD_ID, OTHER_CLUSTER, build_fleet_lake, worst_first


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> KnownLake:
    return build_fleet_lake(tmp_path_factory.mktemp("fleet"))


def _lake(fleet: KnownLake) -> Lake:
    return Lake(fleet.root / "lake", fleet.root / "lagwatch.duckdb")


def _scope(fleet: KnownLake, cluster: str = CLUSTER) -> Scope:
    return Scope(cluster, fleet.now - dt.timedelta(hours=1), fleet.now + dt.timedelta(minutes=1))


EVERY_GROUP = GroupFilter()


def _ids(fleet: KnownLake, chosen: GroupFilter = EVERY_GROUP, offset: int = 0, size: int = 100) -> list[str]:
    return group_queries.listing(_lake(fleet), _scope(fleet), chosen, offset, size)["groups"]["group_id"].tolist()


def _summary(fleet: KnownLake, chosen: GroupFilter = EVERY_GROUP, offset: int = 0) -> dict[str, object]:
    frames = group_queries.listing(_lake(fleet), _scope(fleet), chosen, offset)
    return frames["summary"].iloc[0].to_dict()


def test_pages_are_worst_first_and_cover_every_group_once(fleet: KnownLake) -> None:
    expected = worst_first(FLEET)
    assert [g for g in expected[:3]] == [
        g.group_id for g in sorted(FLEET, key=lambda g: -g.total_lag) if g.status == "STOP"
    ]
    pages = [_ids(fleet, offset=offset) for offset in (0, 100, 200)]
    assert [len(page) for page in pages] == [100, 100, 50]
    assert pages[0] + pages[1] + pages[2] == expected
    summary = _summary(fleet)
    assert (summary["groups"], summary["matching"], summary["offset"]) == (len(FLEET), len(FLEET), 0)
    assert _ids(fleet, offset=40, size=25) == expected[40:65]


def test_an_offset_past_the_end_shows_the_last_page(fleet: KnownLake) -> None:
    assert _summary(fleet, offset=10_000)["offset"] == 200
    assert _ids(fleet, offset=10_000) == worst_first(FLEET)[200:]
    assert _summary(fleet, GroupFilter(search="no such group"), offset=300)["offset"] == 0


def test_search_is_a_case_insensitive_substring_bound_as_a_parameter(fleet: KnownLake) -> None:
    wanted = [g for g in FLEET if "billing-consumer-00" in g.group_id]
    assert len(wanted) == 5
    assert _ids(fleet, GroupFilter(search="BILLING-Consumer-00")) == worst_first(wanted)
    assert _summary(fleet, GroupFilter(search="BILLING-Consumer-00"))["matching"] == 5
    assert _ids(fleet, GroupFilter(search="_")) == [ODD_ID], "an underscore is a character, not a LIKE wildcard"
    assert _ids(fleet, GroupFilter(search="%")) == []
    assert _ids(fleet, GroupFilter(search="x' OR '1'='1")) == [], "the text is a value, never SQL"


def test_status_type_and_topic_filters_keep_exactly_their_groups(fleet: KnownLake) -> None:
    stopped = [g for g in FLEET if g.status in ("STOP", "STALL")]
    assert _ids(fleet, GroupFilter(statuses=("STALL", "STOP"))) == worst_first(stopped)
    auditors = [g for g in FLEET if "audit" in g.topics]
    assert [g.group_id for g in auditors] == [FLEET[i].group_id for i in AUDITORS]
    assert _ids(fleet, GroupFilter(topics=("audit",))) == worst_first(auditors)
    payments = [g for g in FLEET if "payments" in g.topics]
    assert _summary(fleet, GroupFilter(topics=("payments",)))["matching"] == len(payments)
    assert _ids(fleet, GroupFilter(topics=("payments",)), offset=100) == worst_first(payments)[100:]
    both = [g for g in FLEET if g.group_type == "consumer" and ("audit" in g.topics or "payments" in g.topics)]
    chosen = GroupFilter(group_types=("consumer",), topics=("audit", "payments"))
    assert _ids(fleet, chosen) == worst_first(both)
    assert _ids(fleet, GroupFilter(search="orders", statuses=("WARN",), topics=("orders",))) == worst_first(
        [g for g in FLEET if "orders" in g.group_id and g.status == "WARN"]
    )


def test_the_filters_choices_are_the_groups_own(fleet: KnownLake) -> None:
    summary = _summary(fleet, GroupFilter(statuses=("STOP",)))
    assert sorted(summary["statuses"]) == sorted({g.status for g in FLEET}), "choices do not shrink with a filter"
    assert sorted(summary["group_types"]) == sorted({g.group_type for g in FLEET})
    assert list(summary["topic_names"]) == sorted({t for g in FLEET for t in g.topics})


def test_the_page_has_its_groups_newest_rows_and_rates(fleet: KnownLake) -> None:
    page = group_queries.listing(_lake(fleet), _scope(fleet), GroupFilter(topics=("audit",)))["groups"]
    by_id = {g.group_id: g for g in FLEET}
    for row in page.itertuples():
        g = by_id[row.group_id]
        assert (row.status, row.total_lag, row.topics) == (g.status, g.total_lag, ",".join(g.topics))
        assert row.consume_rate == pytest.approx(g.consume_rate), "summed over the group's partitions"
        assert row.produce_rate == pytest.approx(len(g.topics) * 1.0)


def test_each_cluster_sees_only_its_own_groups(fleet: KnownLake) -> None:
    shared = next(g for g in FLEET if g.status == "STOP")
    other = group_queries.listing(_lake(fleet), _scope(fleet, OTHER_CLUSTER), GroupFilter())
    assert other["groups"][["group_id", "status"]].values.tolist() == [[shared.group_id, "LOSS"]]
    assert "LOSS" not in _summary(fleet)["statuses"]


def test_one_group_off_the_page(fleet: KnownLake) -> None:
    last = worst_first(FLEET)[-1]
    row = group_queries.one(_lake(fleet), _scope(fleet), last)
    g = next(g for g in FLEET if g.group_id == last)
    assert row[["group_id", "status", "total_lag"]].values.tolist() == [[last, g.status, g.total_lag]]
    assert row["consume_rate"].tolist() == [pytest.approx(g.consume_rate)]
    assert group_queries.one(_lake(fleet), _scope(fleet), "no-such-group").empty


#: Every query the page runs for one group or one page of groups, and the id it must filter on.
ONE_GROUP_QUERIES = {
    "partitions": group_queries.SQL_GROUP_PARTITIONS,
    "status history": group_queries.SQL_GROUP_STATUS_HISTORY,
    "owners": group_queries.SQL_GROUP_OWNERS,
    "member epochs": group_queries.SQL_GROUP_MEMBER_EPOCHS,
    "page rows": group_queries.SQL_GROUP_ROWS,
    "page rates": group_queries.SQL_GROUP_RATES_FOR,
}


def _parquet_scans(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The Parquet scans of a JSON query plan."""
    if node.get("extra_info", {}).get("Function") == "READ_PARQUET":
        yield node
    for child in node.get("children", []):
        yield from _parquet_scans(child)


@pytest.mark.parametrize("name", ONE_GROUP_QUERIES)
def test_drill_down_and_page_queries_filter_by_group_at_the_parquet_scan(fleet: KnownLake, name: str) -> None:
    """Every Parquet scan in the plan carries the group filter: the query reads one group's rows
    (or the page's), never every group's partitions, whatever the fleet's size."""
    sql = ONE_GROUP_QUERIES[name]
    wanted = "probe-group-7"
    values = _scope(fleet).params() | {"group": wanted, "ids": [wanted], "since": fleet.now - dt.timedelta(hours=1)}
    with group_queries.session(_lake(fleet)) as con:  # the page's own session: its ranged-read macros
        plan = json.loads(con.execute(f"EXPLAIN (FORMAT json) {sql}", bind(sql, values)).fetchall()[0][1])
    scans = [scan for root in plan for scan in _parquet_scans(root)]
    assert scans, plan
    for scan in scans:
        filters = " ".join(scan["extra_info"].get("Filters", []))
        assert "group_id" in filters and repr(wanted) in filters, f"{name}: a scan without the group filter: {scan}"


def test_the_index_is_a_temporary_table_on_a_read_only_connection(fleet: KnownLake, tmp_path: Path) -> None:
    """The page's newest statuses go into a temporary table: allowed on the read-only views file,
    gone with the connection, and the lake files untouched."""
    lake = _lake(fleet)
    before = sorted((p.name, p.stat().st_mtime_ns) for p in lake.path.rglob("*.parquet"))
    views_before = lake.duckdb_path.stat().st_mtime_ns
    group_queries.listing(lake, _scope(fleet), GroupFilter())
    con = lakelib.connect_readonly(lake.path, lake.duckdb_path)
    try:
        with pytest.raises(duckdb.CatalogException):
            con.execute(f"SELECT * FROM {group_queries.INDEX_TABLE}")
    finally:
        con.close()
    assert sorted((p.name, p.stat().st_mtime_ns) for p in lake.path.rglob("*.parquet")) == before
    assert lake.duckdb_path.stat().st_mtime_ns == views_before


def test_the_cluster_picker_lists_clusters_with_rows_in_the_last_hour(tmp_path: Path) -> None:
    """The sidebar's list reads the last hour of group_status (not the whole retention): a
    cluster seen two minutes ago is listed, one last seen two hours ago is not."""
    from dashboard.queries import clusters as cluster_queries

    now = dt.datetime.now(dt.UTC)
    rows = [
        {"cluster": name, "group_id": "g", "status": "OK", "window_start": ts, "updated_at": ts, "version": 1}
        for name, ts in (("recent", now - dt.timedelta(minutes=2)), ("gone", now - dt.timedelta(hours=2)))
    ]
    lake = Lake(tmp_path / "lake", tmp_path / "lagwatch.duckdb")
    lakelib.ensure_lake(lake.path)
    lakelib.write_rows(lake.path, "group_status", lakelib.rows_to_arrow("group_status", rows), "picker")
    lakelib.write_views_file(lake.path, lake.duckdb_path)
    assert cluster_queries.names(lake) == ["recent"]
