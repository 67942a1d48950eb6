"""The groups page's index of newest statuses is the plain newest-wins answer over every file.

The index reads group_status as stored (every version, only the recent days' folders) and
deduplicates only the minutes it needs. Here the lake holds what makes that hard: two date folders
(the recent slice crosses midnight), minutes rewritten by a later batch (updated_at moving on, moving
back, and moving out of the slice), a compaction's copy of a batch file, a NULL in a newest row, a
group gone silent, rows at the slice's edges and another cluster. The expected rows are computed
here from the rows written, and the view's plain dedupe over all files must agree.
"""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path
from typing import Any

import pytest

from dashboard.queries import Lake, Scope, bind, run
from dashboard.queries import groups as group_queries
from lagwatch import lake as lakelib
from lagwatch.lake_queries import newest_rows

END = dt.datetime(2026, 7, 2, 0, 20, tzinfo=dt.UTC)
SCOPE = Scope("c", END - dt.timedelta(hours=1), END)
MINUTE = dt.timedelta(minutes=1)
COLUMNS = group_queries.INDEX_COLUMNS.split(", ")


def _row(group: str, minute: dt.datetime, version: int, lag: int | None, after_s: int = 30, **more: Any) -> dict:
    return {
        "cluster": "c",
        "group_id": group,
        "status": "OK" if lag is None or lag < 100 else "WARN",
        "total_lag": lag,
        "max_time_lag_s": None if lag is None else lag / 10,
        "group_type": "classic",
        "topics": f"t-{group}",
        "window_start": minute,
        "updated_at": minute + dt.timedelta(seconds=after_s),
        "version": version,
    } | more


def _minutes(first: dt.datetime, last: dt.datetime) -> list[dt.datetime]:
    count = int((last - first) / MINUTE) + 1
    return [first + MINUTE * i for i in range(count)]


def _batches() -> dict[str, list[dict]]:
    """Rows per batch file; the version is the batch's number."""
    slice_start = SCOPE.recent_start - MINUTE
    steady = ("steady", "rewritten", "moved_back", "left_slice", "copied", "nulls")
    first = [
        _row(group, minute, 1, lag=index * 10 + minute.minute % 7)
        for index, group in enumerate(steady)
        for minute in _minutes(END - 70 * MINUTE, END - MINUTE)
    ]
    first += [_row("silent", minute, 1, lag=5) for minute in _minutes(END - 70 * MINUTE, END - 50 * MINUTE)]
    first += [_row("old", minute, 1, lag=6) for minute in _minutes(END - 90 * MINUTE, slice_start - MINUTE)]
    first += [_row("edge", slice_start, 1, lag=7)]  # measured before the slice: not in it
    first += [_row("steady", END - MINUTE, 1, lag=500, cluster="d")]
    last = END - MINUTE
    second = [
        _row("rewritten", last, 2, lag=200, after_s=50),
        _row("moved_back", last, 2, lag=300, after_s=10),  # its version 1 said 30 s
        _row("left_slice", last, 2, lag=400, after_s=65),  # measured after the range's end
        _row("nulls", last, 2, lag=None, topics=None),
        _row("copied", last, 2, lag=250),
    ]
    return {"b1": first, "b2": second}


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> tuple[Lake, list[dict]]:
    root = tmp_path_factory.mktemp("group-index")
    path = root / "lake"
    lakelib.ensure_lake(path)
    rows = []
    for stem, batch in _batches().items():
        written = lakelib.write_rows(path, "group_status", lakelib.rows_to_arrow("group_status", batch), stem)
        rows += batch
    copy = written[-1].with_name("c-merged.parquet")  # a compaction's file beside the one it replaces
    shutil.copy(written[-1], copy)
    views = root / "lagwatch.duckdb"
    lakelib.write_views_file(path, views)
    folders = {p.parent.name for p in lakelib.table_dir(path, "group_status").rglob("b*.parquet")}
    assert folders == {"date=2026-07-01", "date=2026-07-02"}
    return Lake(path, views), rows


def _expected(rows: list[dict]) -> dict[str, tuple]:
    """Newest version per minute, then each group's newest by updated_at in the recent slice."""
    versions: dict[tuple, dict] = {}
    for row in rows:
        key = (row["cluster"], row["group_id"], row["window_start"])
        if key not in versions or row["version"] > versions[key]["version"]:
            versions[key] = row
    newest: dict[str, dict] = {}
    for row in versions.values():
        if row["cluster"] == "c" and SCOPE.recent_start <= row["updated_at"] < SCOPE.end:
            best = newest.get(row["group_id"])
            if best is None or row["updated_at"] > best["updated_at"]:
                newest[row["group_id"]] = row
    return {group: tuple(row[c] for c in COLUMNS) for group, row in newest.items()}


def _by_group(frame: Any) -> dict[str, tuple]:
    records = frame[COLUMNS].astype(object).where(frame[COLUMNS].notna(), None).to_dict("records")
    return {r["group_id"]: tuple(_plain(r[c]) for c in COLUMNS) for r in records}


def _plain(value: Any) -> Any:
    return value.to_pydatetime() if hasattr(value, "to_pydatetime") else value


def test_the_index_is_every_groups_newest_status_as_the_plain_dedupe_over_all_files_gives(
    lake: tuple[Lake, list[dict]],
) -> None:
    the_lake, rows = lake
    expected = _expected(rows)
    assert set(expected) == {"steady", "rewritten", "moved_back", "left_slice", "copied", "nulls", "silent"}
    assert expected["moved_back"][3] == 300 and expected["left_slice"][1] == END - 2 * MINUTE
    assert expected["nulls"][3] is None and expected["silent"][1] == END - 50 * MINUTE
    plain = newest_rows(  # the view: every file listed, every minute deduplicated
        "group_status",
        group_queries.INDEX_COLUMNS,
        key="group_id",
        where="cluster = $cluster AND window_start >= $recent_start - INTERVAL 1 MINUTE AND window_start < $end "
        "AND updated_at >= $recent_start AND updated_at < $end",
        newest_by="updated_at",
    )
    with group_queries.session(the_lake) as con:
        assert _by_group(run(con, plain, **SCOPE.params())) == expected
        group_queries.build_index(con, SCOPE.params())
        index = con.execute(f"SELECT * FROM {group_queries.INDEX_TABLE}").df()
    assert len(index) == len(expected)
    assert _by_group(index) == expected


def test_groups_whose_newest_stored_row_was_replaced_are_settled_by_the_plain_query(
    lake: tuple[Lake, list[dict]],
) -> None:
    """The fast query leaves exactly the rewritten-backwards and rewritten-out-of-slice groups
    unsettled (so the test above went through both paths)."""
    the_lake, _ = lake
    with group_queries.session(the_lake) as con:
        con.execute(group_queries.SQL_GROUP_INDEX, bind(group_queries.SQL_GROUP_INDEX, SCOPE.params()))
        unsettled = con.execute(f"SELECT group_id FROM {group_queries.INDEX_TABLE} WHERE window_start IS NULL")
        assert sorted(group for (group,) in unsettled.fetchall()) == ["left_slice", "moved_back"]


def test_the_listing_shows_the_indexed_rows_whole(lake: tuple[Lake, list[dict]]) -> None:
    the_lake, rows = lake
    expected = _expected(rows)
    groups = group_queries.listing(the_lake, SCOPE, group_queries.GroupFilter())["groups"]
    assert sorted(groups["group_id"]) == sorted(expected)
    shown = _by_group(groups.assign(window_start=[expected[g][1] for g in groups["group_id"]]))
    assert shown == expected, "the page's whole rows are the rows the index chose"


def test_the_files_of_other_days_are_not_opened(lake: tuple[Lake, list[dict]], tmp_path: Path) -> None:
    """A last-hour index lists only the folders of the slice's days: a file no reader can open,
    in an older day's folder, does not break it."""
    the_lake, rows = lake
    root = tmp_path / "lake"
    shutil.copytree(the_lake.path, root)
    views = tmp_path / "lagwatch.duckdb"
    lakelib.write_views_file(root, views)  # before the broken file: making a view reads every file
    broken = lakelib.table_dir(root, "group_status") / "date=2026-06-20" / "b0.parquet"
    broken.parent.mkdir()
    broken.write_bytes(b"not parquet")
    with group_queries.session(Lake(root, views)) as con:
        group_queries.build_index(con, SCOPE.params())
        assert _by_group(con.execute(f"SELECT * FROM {group_queries.INDEX_TABLE}").df()) == _expected(rows)
