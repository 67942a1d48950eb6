"""`lagwatch sql "…" --format table|csv|json`: one read-only query over the lake's views.

Why read-only twice over: the session is opened on `lagwatch.duckdb` with DuckDB's read_only
flag, and the statement is classified by DuckDB's own parser before it runs, so a write,
COPY, ATTACH, INSTALL/LOAD or SET is refused with a message saying why instead of an obscure
"read-only" error (or, for COPY … TO, a file written somewhere). A bad query exits 2 with
DuckDB's message and no traceback.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import decimal
import json
import sys
from typing import Any, TextIO

from lagwatch import lake as lakelib
from lagwatch.config import Config

EXIT_OK = 0
EXIT_BAD_QUERY = 2
#: Statement types that only read.
_READ_TYPES = ("SELECT", "EXPLAIN")


class RefusedQuery(ValueError):
    """The statement would change something or reach outside the lake."""


def check_read_only(query: str) -> None:
    """Exactly one statement, and it reads (SELECT / WITH / FROM-first / DESCRIBE / SHOW / EXPLAIN)."""
    import duckdb

    statements = duckdb.extract_statements(query)
    if len(statements) != 1:
        raise RefusedQuery(f"expected exactly one SQL statement, got {len(statements)}")
    kind = statements[0].type.name
    if kind not in _READ_TYPES:
        raise RefusedQuery(
            f"{kind} statements are not allowed: `lagwatch sql` only reads the lake (SELECT, DESCRIBE, SHOW, EXPLAIN)"
        )


def run(config: Config, args: argparse.Namespace) -> int:
    import duckdb

    query = str(args.query)
    try:
        check_read_only(query)
    except RefusedQuery as exc:
        print(f"lagwatch sql: refused: {exc}", file=sys.stderr)
        return EXIT_BAD_QUERY
    except duckdb.Error as exc:
        print(f"lagwatch sql: {exc}", file=sys.stderr)
        return EXIT_BAD_QUERY
    con = lakelib.connect_readonly(config.resolve_path(config.lake.path), config.resolve_path(config.lake.duckdb_path))
    try:
        result = con.execute(query)
        columns = [d[0] for d in result.description or []]
        rows = result.fetchall()
    except duckdb.Error as exc:
        print(f"lagwatch sql: {exc}", file=sys.stderr)
        return EXIT_BAD_QUERY
    finally:
        con.close()
    FORMATTERS[getattr(args, "format", "table")](columns, rows, sys.stdout)
    return EXIT_OK


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, dt.datetime):
        return value.isoformat()
    return str(value)


def _jsonable(value: Any) -> Any:
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, float) and value != value:
        return None
    return value


def write_csv(columns: list[str], rows: list[tuple[Any, ...]], out: TextIO) -> None:
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows([_text(v) for v in row] for row in rows)


def write_json(columns: list[str], rows: list[tuple[Any, ...]], out: TextIO) -> None:
    """A JSON array of objects (one per row), timestamps as ISO 8601 with their UTC offset."""
    records = [{c: _jsonable(v) for c, v in zip(columns, row, strict=True)} for row in rows]
    json.dump(records, out, indent=None, default=str)
    out.write("\n")


def write_table(columns: list[str], rows: list[tuple[Any, ...]], out: TextIO) -> None:
    """Aligned columns for a terminal, with the row count underneath."""
    cells = [columns, *[[_text(v) for v in row] for row in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(columns))]
    line = lambda r: " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()  # noqa: E731
    out.write(line(columns) + "\n")
    out.write("-+-".join("-" * w for w in widths) + "\n")
    for row in cells[1:]:
        out.write(line(row) + "\n")
    out.write(f"({len(rows)} row{'s' if len(rows) != 1 else ''})\n")


FORMATTERS = {"csv": write_csv, "json": write_json, "table": write_table}
