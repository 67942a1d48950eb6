"""The SQL page's guard on a real lake: reads run; writes, COPY and reads outside the lake are
refused with a message that says why; DuckDB's own sandbox backs up the static checks."""

from __future__ import annotations

import re
from pathlib import Path

import duckdb
import pytest

from lagwatch import sql_guard
from tests.dashboard.conftest import KnownLake


@pytest.fixture
def outside_file(tmp_path: Path) -> Path:
    """A real Parquet file next to (not inside) the lake."""
    path = tmp_path / "secret.parquet"
    duckdb.connect().execute(f"COPY (SELECT 42 AS answer) TO '{path.as_posix()}'")
    return path


def run(lake: KnownLake, sql: str) -> sql_guard.QueryResult:
    return sql_guard.run_readonly(lake.root / "lake", lake.root / "lagwatch.duckdb", sql)


def test_allows_reads_of_the_views(known_lake: KnownLake) -> None:
    result = run(known_lake, "WITH d AS (SELECT * FROM dead_letters) SELECT error, count(*) AS n FROM d GROUP BY ALL")
    counts = dict(zip(result.frame["error"], result.frame["n"], strict=True))
    expected: dict[str, int] = {}
    for row in known_lake.rows["dead_letters"]:
        expected[row["error"]] = expected.get(row["error"], 0) + 1
    assert counts == expected
    assert not result.truncated


def test_allows_reading_lake_files_directly(known_lake: KnownLake) -> None:
    glob = (known_lake.root / "lake" / "dead_letters" / "*" / "*.parquet").as_posix()
    result = run(known_lake, f"SELECT count(*) AS n FROM read_parquet('{glob}')")
    assert result.frame["n"].iloc[0] == len(known_lake.rows["dead_letters"])


def test_truncates_large_results(known_lake: KnownLake) -> None:
    result = sql_guard.run_readonly(
        known_lake.root / "lake", known_lake.root / "lagwatch.duckdb", "SELECT * FROM range(50)", max_rows=10
    )
    assert len(result.frame) == 10
    assert result.truncated


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("DELETE FROM group_status", "DELETE is not allowed: queries over the lake are read-only"),
        (
            "INSERT INTO group_status (group_id) VALUES ('x')",
            "INSERT is not allowed: queries over the lake are read-only",
        ),
        ("CREATE TABLE t AS SELECT 1", "CREATE is not allowed: queries over the lake are read-only"),
        ("DROP VIEW lag_1m", "DROP is not allowed: queries over the lake are read-only"),
        ("COPY group_status TO '/tmp/out.csv'", "COPY is not allowed: it reads or writes files"),
        ("ATTACH '/tmp/other.db' AS other", "ATTACH is not allowed"),
        ("INSTALL httpfs", "INSTALL / LOAD of extensions is not allowed"),
        ("LOAD httpfs", "INSTALL / LOAD of extensions is not allowed"),
        ("SET enable_external_access = true", "SET / RESET is not allowed"),
        ("PRAGMA enable_profiling", "PRAGMA is not allowed"),
        ("SELECT 1; DELETE FROM group_status", "One statement at a time"),
        ("SELEC 1", "The query does not parse"),
    ],
)
def test_refuses_non_reads_with_a_clear_message(known_lake: KnownLake, sql: str, message: str) -> None:
    with pytest.raises(sql_guard.SqlRefused, match=re.escape(message)):
        run(known_lake, sql)


@pytest.mark.parametrize(
    "template",
    [
        "SELECT * FROM read_parquet('{path}')",
        "SELECT * FROM '{path}'",
        "SELECT * FROM read_parquet('{lake}/../secret.parquet')",
        "SELECT * FROM read_csv('/etc/passwd')",
        "SELECT * FROM glob('/etc/*')",
    ],
)
def test_refuses_reads_outside_the_lake(known_lake: KnownLake, outside_file: Path, template: str) -> None:
    sql = template.format(path=outside_file.as_posix(), lake=(known_lake.root / "lake").as_posix())
    with pytest.raises(sql_guard.SqlRefused, match="Reading files outside the lake is not allowed"):
        run(known_lake, sql)


def test_sandbox_refuses_paths_the_static_check_cannot_see(known_lake: KnownLake, outside_file: Path) -> None:
    """A path built at run time passes the literal check; DuckDB's sandbox still refuses it."""
    stem = outside_file.as_posix()[1 : -len(".parquet")]
    sql = f"SELECT * FROM read_parquet(chr(47) || '{stem}' || '.parq' || 'uet')"
    assert sql_guard.check(sql, known_lake.root / "lake")  # no literal looks like a file: the static check passes
    with pytest.raises(sql_guard.SqlRefused, match="outside the lake"):
        run(known_lake, sql)


def test_sandbox_settings_cannot_be_undone(known_lake: KnownLake) -> None:
    con = sql_guard.sandboxed_connection(known_lake.root / "lake", known_lake.root / "lagwatch.duckdb")
    try:
        with pytest.raises(duckdb.Error, match="locked"):
            con.execute("SET enable_external_access = true")
    finally:
        con.close()
