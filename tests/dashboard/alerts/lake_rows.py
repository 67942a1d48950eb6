"""Write lake rows the way the Spark job would, so alert tests run on a real lake.

The Spark job is built elsewhere; these helpers write rows through the lake contract
(`lagwatch.lake.write_rows`), one file per call, newest version wins like the job's batches.
"""

from __future__ import annotations

import datetime as dt
import itertools
from pathlib import Path
from typing import Any

from lagwatch.lake import rows_to_arrow, write_rows

_file_numbers = itertools.count(1)


def at(ts: float) -> dt.datetime:
    return dt.datetime.fromtimestamp(ts, dt.UTC)


def write(lake: str | Path, table: str, rows: list[dict[str, Any]]) -> None:
    number = next(_file_numbers)
    for row in rows:
        row.setdefault("version", number)
    write_rows(lake, table, rows_to_arrow(table, rows), f"test-{number:06d}")


def metric(lake: str | Path, ts: float, name: str, value: float, cluster: str = "test", **labels: Any) -> None:
    """One 1-minute window of a metric whose last value is `value`, starting at `ts`."""
    row = {
        "cluster": cluster,
        "window_start": at(ts),
        "window_end": at(ts + 60),
        "source": "jmx",
        "metric": name,
        "kind": "gauge",
        "samples": 1,
        "min": value,
        "max": value,
        "avg": value,
        "first": value,
        "last": value,
        **labels,
    }
    write(lake, "metrics_1m", [row])


def group_status(
    lake: str | Path, ts: float, group_id: str, status: str = "OK", cluster: str = "test", **values: Any
) -> None:
    row = {
        "cluster": cluster,
        "group_id": group_id,
        "status": status,
        "reason": f"{status} reason",
        "window_start": at(ts - ts % 60),
        "updated_at": at(ts),
        **values,
    }
    write(lake, "group_status", [row])
