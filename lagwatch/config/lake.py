"""`[lake]`: where the Parquet lake lives, how long each table keeps rows, and compaction."""

from __future__ import annotations

from pydantic import Field, field_validator

from lagwatch.config.base import StrictModel


class LakeConfig(StrictModel):
    #: Folder of the Parquet lake; a relative path resolves against the config file's folder.
    path: str = "lake"
    #: DuckDB file holding only views over the lake (opened read-only by readers).
    duckdb_path: str = "lagwatch.duckdb"
    #: Days to keep per table; tables not named keep `default_retention_days`.
    default_retention_days: float = Field(30, gt=0)
    #: Days to keep per lake table, by table name: {lag_1m = 90}.
    retention_days: dict[str, float] = Field(default_factory=dict)
    #: Files per table partition that trigger compaction.
    compact_after_files: int = Field(32, ge=2)
    #: Replaced files are deleted only after this many seconds (running queries keep them).
    grace_period_s: float = Field(600, ge=0)

    @field_validator("retention_days")
    @classmethod
    def _retention_names_tables(cls, days: dict[str, float]) -> dict[str, float]:
        from lagwatch.lake import TABLES

        unknown = sorted(set(days) - set(TABLES))
        if unknown:
            raise ValueError(f"unknown table(s) {unknown}; lake tables: {sorted(TABLES)}")
        for table, value in days.items():
            if value <= 0:
                raise ValueError(f"{table}: retention must be more than 0 days, got {value}")
        return days
