"""Safety for ad-hoc SQL (the dashboard's SQL page and `lagwatch sql`): one read, over the lake only.

One implementation for both, so the command line is never the weaker way in. Two layers, because either alone has gaps:

1. Before running, DuckDB's own parser classifies the text (`extract_statements`): exactly one
   statement, and it must be a read (SELECT, WITH … SELECT, FROM-first, DESCRIBE/SHOW/SUMMARIZE,
   EXPLAIN). Writes, COPY, ATTACH, INSTALL/LOAD, PRAGMA and SET are refused with a message
   saying why. String literals that look like file paths or URLs outside the lake are refused
   too, so the operator learns why before anything runs.
2. The query then runs on a read-only connection sandboxed by DuckDB itself:
   `allowed_directories` = the lake, `enable_external_access = false` (no file, URL or
   replacement scan such as `FROM 'x.csv'` outside the lake), `lock_configuration = true` (the
   query cannot undo that). A permission error from DuckDB is turned into the same message.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import duckdb

from lagwatch import lake as lakelib

if TYPE_CHECKING:
    import pandas as pd

T = TypeVar("T")

MAX_ROWS = 10_000
MEMORY_LIMIT = "1GB"

_READS = {duckdb.StatementType.SELECT, duckdb.StatementType.EXPLAIN}
_WRITES = {
    "INSERT",
    "UPDATE",
    "DELETE",
    "CREATE",
    "CREATE_FUNC",
    "DROP",
    "ALTER",
    "MERGE_INTO",
    "TRANSACTION",
    "VACUUM",
    "ANALYZE",
    "UPDATE_EXTENSIONS",
    "COPY_DATABASE",
}
_REASONS = {
    "COPY": (
        "COPY is not allowed: it reads or writes files. Download results from the SQL page, "
        "or use `lagwatch sql --format csv`."
    ),
    "EXPORT": "EXPORT DATABASE is not allowed: it writes files.",
    "ATTACH": "ATTACH is not allowed: only the lake's views can be queried.",
    "DETACH": "DETACH is not allowed: only the lake's views can be queried.",
    "LOAD": "INSTALL / LOAD of extensions is not allowed.",
    "PRAGMA": "PRAGMA is not allowed: settings cannot be changed from a query.",
    "SET": "SET / RESET is not allowed: settings cannot be changed from a query.",
    "VARIABLE_SET": "SET VARIABLE is not allowed: settings cannot be changed from a query.",
    "CALL": "CALL is not allowed: use SELECT * FROM table_function(…) for table functions.",
    "PREPARE": "PREPARE / EXECUTE is not allowed: write the query directly.",
    "EXECUTE": "PREPARE / EXECUTE is not allowed: write the query directly.",
}
_FILE_EXTENSIONS = (".parquet", ".csv", ".tsv", ".json", ".ndjson", ".jsonl", ".txt", ".gz", ".zst", ".db", ".duckdb")
_URL = re.compile(r"^[a-z][a-z0-9+.-]*://", re.IGNORECASE)


class SqlRefused(ValueError):
    """The query is not allowed; the message says why, for the operator."""


class NoLake(SqlRefused):
    """The configured lake folder does not exist (nothing has been written yet, or a wrong path)."""


@dataclass(frozen=True)
class QueryResult:
    frame: pd.DataFrame
    truncated: bool


@dataclass(frozen=True)
class Rows:
    columns: list[str]
    rows: list[tuple[Any, ...]]


def _statement_type(sql: str) -> duckdb.StatementType:
    try:
        statements = duckdb.connect(":memory:").extract_statements(sql)
    except duckdb.Error as exc:
        raise SqlRefused(f"The query does not parse: {exc}") from None
    if not statements:
        raise SqlRefused("Enter a query, e.g. SELECT * FROM group_status LIMIT 10.")
    if len(statements) > 1:
        raise SqlRefused(f"One statement at a time, please: found {len(statements)}.")
    return statements[0].type


def _refuse_non_read(kind: duckdb.StatementType) -> None:
    if kind in _READS:
        return
    name = kind.name
    if name in _WRITES:
        raise SqlRefused(f"{name} is not allowed: queries over the lake are read-only (SELECT / WITH … SELECT only).")
    raise SqlRefused(_REASONS.get(name, f"{name} statements are not allowed: only reads (SELECT / WITH … SELECT)."))


def _string_literals(sql: str) -> list[str]:
    """The text of every string constant, found by DuckDB's tokenizer (not a regex over SQL)."""
    tokens = duckdb.tokenize(sql)
    literals = []
    for index, (position, kind) in enumerate(tokens):
        if kind != duckdb.token_type.string_const:
            continue
        end = tokens[index + 1][0] if index + 1 < len(tokens) else len(sql)
        raw = sql[position:end].strip().rstrip(";,) \n\t")
        if len(raw) >= 2 and raw[0] == raw[-1] == "'":
            literals.append(raw[1:-1].replace("''", "'"))
    return literals


def _looks_like_file(literal: str) -> bool:
    text = literal.strip()
    return (
        bool(_URL.match(text))
        or text.startswith(("/", "./", "../", "~"))
        or text.lower().endswith(_FILE_EXTENSIONS)
        or ("*" in text and "/" in text)
    )


def _refuse_outside_lake(sql: str, lake_root: Path) -> None:
    for literal in _string_literals(sql):
        if not _looks_like_file(literal):
            continue
        if _URL.match(literal.strip()):
            raise SqlRefused(f"Reading remote files is not allowed ({literal!r}): query the lake's views instead.")
        resolved = Path(literal).expanduser().resolve()
        if not resolved.is_relative_to(lake_root):
            raise SqlRefused(
                f"Reading files outside the lake is not allowed: {literal!r} is not under {lake_root}. "
                "Query the lake's views instead (lag_1m, metrics_1m, group_status, …)."
            )


def check(sql: str, lake_root: str | Path) -> str:
    """Return the statement if it may run; raise SqlRefused saying why not."""
    statement = sql.strip()
    _refuse_non_read(_statement_type(statement))
    _refuse_outside_lake(statement, Path(lake_root).resolve())
    return statement


def sandboxed_connection(lake: str | Path, duckdb_path: str | Path) -> duckdb.DuckDBPyConnection:
    """A read-only session that can read files under the lake and nothing else, settings locked."""
    con = lakelib.connect_readonly(lake, duckdb_path)
    root = Path(lake).resolve().as_posix().replace("'", "''")  # a config value, not user input
    con.execute(f"SET allowed_directories = ['{root}/']")
    con.execute(f"SET memory_limit = '{MEMORY_LIMIT}'")
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")
    return con


def _run_sandboxed(lake: str | Path, duckdb_path: str | Path, sql: str, read: Callable[[Any], T]) -> T:
    """Check, then run on a sandboxed connection closed before returning; `read` takes the relation."""
    statement = check(sql, lake)
    if not Path(lake).is_dir():
        raise NoLake(f"no lake at {Path(lake).resolve()} (lake.path): start `lagwatch stream` or fix the path")
    con = sandboxed_connection(lake, duckdb_path)
    try:
        return read(con.sql(statement))
    except duckdb.PermissionException as exc:
        raise SqlRefused(
            f"Reading files outside the lake is not allowed ({exc}). Query the lake's views instead."
        ) from None
    except duckdb.Error as exc:
        raise SqlRefused(f"The query failed: {exc}") from None
    finally:
        con.close()


def run_readonly(lake: str | Path, duckdb_path: str | Path, sql: str, max_rows: int = MAX_ROWS) -> QueryResult:
    """The SQL page's query: at most `max_rows` rows as a DataFrame, and whether more were cut."""
    frame = _run_sandboxed(lake, duckdb_path, sql, lambda relation: relation.limit(max_rows + 1).df())
    return QueryResult(frame.head(max_rows), truncated=len(frame) > max_rows)


def fetch_readonly(lake: str | Path, duckdb_path: str | Path, sql: str) -> Rows:
    """`lagwatch sql`'s query: every row as Python values (no row cap: the operator asked for them)."""

    def read(relation: Any) -> Rows:
        if relation is None:  # a statement with no result set
            return Rows([], [])
        return Rows(list(relation.columns), relation.fetchall())

    return _run_sandboxed(lake, duckdb_path, sql, read)
