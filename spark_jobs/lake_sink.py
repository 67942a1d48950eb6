"""foreachBatch writer: one micro-batch → whole Parquet files in the lake, per table.

Why it is safe to replay: the files of batch N of query Q are always named
``b<N>-<Q>.parquet`` (12-digit N) inside their date partitions and written atomically
(temp file, then rename) by :func:`lagwatch.lake.write_rows`. Spark re-runs an unfinished
batch with the same id and the same offsets after a crash, so the replay rewrites the very
same files with the very same rows; nothing is appended twice. Each row carries
``version = batch_id``, which is how readers pick the newest row of a window still open.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from lagwatch import lake as lakelib

log = logging.getLogger(__name__)

#: Picks one table's rows out of the micro-batch, as Arrow (lake columns; extra columns are dropped).
Selector = Callable[[Any], Any]


def batch_file_stem(batch_id: int, query: str) -> str:
    return f"b{batch_id:012d}-{query}"


def write_batch(lake: str | Path, table: str, data: Any, batch_id: int, query: str) -> list[Path]:
    """Write one table's Arrow rows of a batch, stamped with `version = batch_id` (idempotent)."""
    import pyarrow as pa

    if "version" in data.column_names:
        data = data.drop_columns(["version"])
    data = data.append_column("version", pa.array([batch_id] * data.num_rows, pa.int64()))
    return lakelib.write_rows(lake, table, data, file_stem=batch_file_stem(batch_id, query))


class LakeWriter:
    """The foreachBatch function of one query: every selector's rows go to its table."""

    def __init__(self, lake: str | Path, query: str, tables: Mapping[str, Selector]) -> None:
        self.lake = Path(lake)
        self.query = query
        self.tables = dict(tables)

    def __call__(self, batch: Any, batch_id: int) -> None:
        """Collect the batch to the driver once, as Arrow, then split it per table.

        One collection instead of one Spark job per table: no persist of the batch, and the
        stateful operator's output is computed exactly once.
        """
        started = time.monotonic()
        data = batch.toArrow()
        parts = {table: select(data) for table, select in self.tables.items()}
        # The tables are written side by side: Parquet encoding releases the GIL, and the
        # executors sit idle until this function returns.
        with ThreadPoolExecutor(max_workers=max(1, min(len(parts), os.cpu_count() or 1))) as pool:
            counts = pool.map(lambda item: self.write_table(item[0], item[1], batch_id), parts.items())
            written = dict(zip(parts, counts, strict=True))
        log.debug(
            "%s batch %d: wrote %s in %.2f s",
            self.query,
            batch_id,
            ", ".join(f"{t}={n}" for t, n in written.items()),
            time.monotonic() - started,
        )

    def write_table(self, table: str, data: Any, batch_id: int) -> int:
        """One table's rows of a batch (the Arrow selection of `tables[table]`); returns the row count."""
        if data.num_rows:
            write_batch(self.lake, table, data, batch_id, self.query)
        return int(data.num_rows)
