"""`lagwatch sql "…" --format table|csv|json`: one read-only query over the lake's views.

It runs through the very sandbox the dashboard's SQL page uses (`lagwatch.sql_guard`): one
read statement, a read-only DuckDB session that cannot reach files outside the lake, settings
locked. A refused or bad query exits 2 with the reason and no traceback; a missing lake exits 1
saying where it looked, and nothing is created.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import decimal
import json
import sys
from typing import Any, TextIO

from lagwatch import exit_codes
from lagwatch.config import Config
from lagwatch.sql_guard import NoLake, SqlRefused, fetch_readonly


def run(config: Config, args: argparse.Namespace) -> int:
    lake = config.resolve_path(config.lake.path)
    try:
        result = fetch_readonly(lake, config.resolve_path(config.lake.duckdb_path), str(args.query))
    except NoLake as exc:
        print(f"lagwatch sql: {exc}", file=sys.stderr)
        return exit_codes.FAILED
    except SqlRefused as exc:
        print(f"lagwatch sql: refused: {exc}", file=sys.stderr)
        return exit_codes.BAD_INPUT
    FORMATTERS[getattr(args, "format", "table")](result.columns, result.rows, sys.stdout)
    return exit_codes.OK


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
