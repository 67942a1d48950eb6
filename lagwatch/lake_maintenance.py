"""Lake maintenance: compaction (bounded file count) and retention (bounded age), never in a reader's way.

Compaction is tiered so a busy day is not rewritten every pass: when a date partition holds
more than `lake.compact_after_files` live batch files (the Spark job's `b…` files), those are
merged into one compacted `c…` file that keeps only the newest `version` of every key (what the
views show anyway), written atomically next to the files it replaces; when it holds more than
that many compacted files, they are merged the same way. A partition therefore never holds more
than about twice the threshold, and each pass rewrites only the files merged, not the whole day.
Merging one tier while the other keeps older versions of some keys is safe: every row keeps its
version, and the views pick the newest across all files. The replaced files are *not*
deleted at once: they go on the table's tombstone list (``_tombstones.json``) and are deleted
only after `lake.grace_period_s`, so a query that listed them a moment ago still finds them.
Meanwhile the views see both the merged file and the replaced ones; they deduplicate by key
and version, so the overlap is invisible.

Retention: date partitions older than the table's retention (`lake.retention_days[table]`,
else `lake.default_retention_days`) go on the tombstone list the same way. The schema
sentinel partition (``date=1970-01-01/_schema.parquet``) is never touched.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import logging
import os
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from lagwatch import lake as lakelib
from lagwatch.config import LakeConfig

log = logging.getLogger(__name__)

TOMBSTONES_FILE = "_tombstones.json"
COMPACTED_PREFIX = "c"


@dataclass
class MaintenanceReport:
    compacted: dict[str, int] = field(default_factory=dict)  # "table/date=…" -> files merged
    expired: list[str] = field(default_factory=list)  # "table/date=…" partitions past retention
    deleted: int = 0  # files deleted after their grace period


def maintain_lake(lake: str | os.PathLike[str], config: LakeConfig, now: float | None = None) -> MaintenanceReport:
    """One pass over every table: delete files past grace, expire old partitions, compact."""
    now = time.time() if now is None else now
    report = MaintenanceReport()
    for name in lakelib.TABLES:
        table_root = lakelib.table_dir(lake, name)
        if not table_root.is_dir():
            continue
        tombstones = Tombstones(table_root)
        report.deleted += tombstones.delete_expired(now, config.grace_period_s)
        report.expired += expire_partitions(table_root, name, retention_days(config, name), tombstones, now)
        for partition in _date_partitions(table_root):
            merged = compact_partition(lake, name, partition, config.compact_after_files, tombstones, now)
            if merged:
                report.compacted[f"{name}/{partition.name}"] = merged
        tombstones.save()
    if report.compacted or report.expired or report.deleted:
        log.info(
            "lake maintenance: compacted %s, expired %s, deleted %d file(s)",
            report.compacted or "-",
            report.expired or "-",
            report.deleted,
        )
    return report


def retention_days(config: LakeConfig, table: str) -> float:
    return config.retention_days.get(table, config.default_retention_days)


class Tombstones:
    """A table's replaced files and when they were replaced; saved atomically as JSON."""

    def __init__(self, table_root: Path) -> None:
        self.path = table_root / TOMBSTONES_FILE
        self.root = table_root
        self.entries: dict[str, float] = json.loads(self.path.read_text()) if self.path.exists() else {}
        self._dirty = False

    def add(self, files: list[Path], now: float) -> None:
        for file in files:
            self.entries.setdefault(file.relative_to(self.root).as_posix(), now)
        self._dirty = self._dirty or bool(files)

    def __contains__(self, file: Path) -> bool:
        return file.relative_to(self.root).as_posix() in self.entries

    def delete_expired(self, now: float, grace_s: float) -> int:
        deleted = 0
        for relative, replaced_at in list(self.entries.items()):
            if now - replaced_at < grace_s:
                continue
            target = self.root / relative
            target.unlink(missing_ok=True)
            _remove_if_empty(target.parent)
            del self.entries[relative]
            self._dirty = True
            deleted += 1
        return deleted

    def save(self) -> None:
        if not self._dirty:
            return
        tmp = self.path.with_name(f".{self.path.name}.{uuid.uuid4().hex}.tmp")
        tmp.write_text(json.dumps(self.entries, indent=0, sort_keys=True))
        os.replace(tmp, self.path)
        self._dirty = False


def _remove_if_empty(directory: Path) -> None:
    with contextlib.suppress(OSError):  # not empty (or already gone): keep it
        directory.rmdir()


def _date_partitions(table_root: Path) -> list[Path]:
    return sorted(
        p
        for p in table_root.iterdir()
        if p.is_dir() and p.name.startswith("date=") and p.name != lakelib.SCHEMA_PARTITION
    )


def _live_files(partition: Path, tombstones: Tombstones) -> list[Path]:
    return sorted(f for f in partition.glob("*.parquet") if f not in tombstones and f.name != lakelib.SCHEMA_FILE)


def expire_partitions(table_root: Path, name: str, days: float, tombstones: Tombstones, now: float) -> list[str]:
    """Tombstone every file of the date partitions older than `days` (the sentinel excepted)."""
    cutoff = dt.datetime.fromtimestamp(now, dt.UTC).date() - dt.timedelta(days=days)
    expired = []
    for partition in _date_partitions(table_root):
        try:
            day = dt.date.fromisoformat(partition.name.removeprefix("date="))
        except ValueError:
            log.warning("%s: ignoring unexpected folder %s", name, partition)
            continue
        files = _live_files(partition, tombstones)
        if day < cutoff and files:
            tombstones.add(files, now)
            expired.append(f"{name}/{partition.name}")
    return expired


def compact_partition(
    lake: str | os.PathLike[str],
    name: str,
    partition: Path,
    threshold: int,
    tombstones: Tombstones,
    now: float,
) -> int:
    """Merge one tier of the partition's live files (batch files first, else compacted ones) into
    one newest-wins file once that tier has more than `threshold` files; return how many merged."""
    live = _live_files(partition, tombstones)
    batch_files = [f for f in live if not f.name.startswith(COMPACTED_PREFIX)]
    compacted = [f for f in live if f.name.startswith(COMPACTED_PREFIX)]
    files = batch_files if len(batch_files) > threshold else compacted
    if len(files) <= threshold:
        return 0
    data = newest_rows(name, files)
    stem = f"{COMPACTED_PREFIX}{int(now * 1000):013d}-{uuid.uuid4().hex[:8]}"
    written = lakelib.write_rows(lake, name, data, file_stem=stem)
    if any(path.parent != partition for path in written):
        raise RuntimeError(f"{name}: compacted rows of {partition} landed in {written}")
    tombstones.add(files, now)
    return len(files)


def newest_rows(name: str, files: list[Path]):  # type: ignore[no-untyped-def]
    """The newest version of every key across `files`, as Arrow in the table's schema."""
    import duckdb
    import pyarrow as pa

    spec = lakelib.table(name)
    paths = ", ".join("'" + f.as_posix().replace("'", "''") + "'" for f in files)
    con = duckdb.connect()
    try:
        con.execute("SET TimeZone = 'UTC'")
        data = con.sql(
            f"SELECT * FROM read_parquet([{paths}], union_by_name = true) "
            f"QUALIFY row_number() OVER (PARTITION BY {', '.join(spec.key)} ORDER BY version DESC) = 1"
        ).to_arrow_table()
    finally:
        con.close()
    schema = lakelib.arrow_schema(name)
    for column in schema:  # files written before the table gained a column: NULL there
        if column.name not in data.column_names:
            data = data.append_column(column.name, pa.nulls(data.num_rows, column.type))
    return data.select(schema.names).cast(schema)
