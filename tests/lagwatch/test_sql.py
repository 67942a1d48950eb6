"""`lagwatch sql`: output formats over real lake files, refusal of anything but reads."""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import io
import json
from typing import Any

import pytest

from lagwatch import lake as lakelib
from lagwatch.config import parse_config
from lagwatch.sql import run
from spark_jobs.lake_sink import write_batch

WHEN = dt.datetime(2026, 5, 4, 3, 2, 1, tzinfo=dt.UTC)


@pytest.fixture
def config(tmp_path: Any) -> Any:
    cfg = parse_config({"lake": {"path": str(tmp_path / "lake"), "duckdb_path": str(tmp_path / "lagwatch.duckdb")}})
    rows = [
        {
            "cluster": "c",
            "received_at": WHEN,
            "source_topic": "t",
            "source_partition": p,
            "source_offset": 7,
            "raw": 'x,y "quoted"',
            "error": f"bad {p}",
        }
        for p in (0, 1)
    ]
    write_batch(cfg.lake.path, "dead_letters", lakelib.rows_to_arrow("dead_letters", rows), 0, "test")
    return cfg


def _sql(config: Any, capsys: Any, query: str, fmt: str = "table") -> tuple[int, str, str]:
    code = run(config, argparse.Namespace(query=query, format=fmt))
    out, err = capsys.readouterr()
    return code, out, err


QUERY = "select source_partition, raw, received_at from dead_letters order by source_partition"


def test_csv_json_and_table_formats(config: Any, capsys: Any) -> None:
    code, out, _ = _sql(config, capsys, QUERY, "csv")
    assert code == 0
    rows = list(csv.reader(io.StringIO(out)))
    assert rows[0] == ["source_partition", "raw", "received_at"]
    assert rows[1] == ["0", 'x,y "quoted"', "2026-05-04T03:02:01+00:00"], "timestamps in UTC, CSV quoting intact"

    code, out, _ = _sql(config, capsys, QUERY, "json")
    assert code == 0
    assert json.loads(out) == [
        {"source_partition": p, "raw": 'x,y "quoted"', "received_at": "2026-05-04T03:02:01+00:00"} for p in (0, 1)
    ]

    code, out, _ = _sql(config, capsys, QUERY, "table")
    lines = out.splitlines()
    assert code == 0
    assert lines[0].split(" | ")[0].strip() == "source_partition"
    assert lines[-1] == "(2 rows)"


@pytest.mark.parametrize(
    "statement",
    [
        "insert into dead_letters select * from dead_letters",
        "copy (select 1) to '/tmp/lagwatch-should-not-exist.csv'",
        "create table x as select 1",
        "attach 'other.duckdb'",
        "set threads = 1",
        "select 1; select 2",
    ],
)
def test_writes_and_copy_are_refused(config: Any, capsys: Any, statement: str) -> None:
    code, out, err = _sql(config, capsys, statement)
    assert code == 2
    assert "refused" in err
    assert out == ""


def test_bad_query_exits_2_with_duckdb_message(config: Any, capsys: Any) -> None:
    code, _, err = _sql(config, capsys, "select no_such_column from dead_letters")
    assert code == 2
    assert "no_such_column" in err
    assert "Traceback" not in err
