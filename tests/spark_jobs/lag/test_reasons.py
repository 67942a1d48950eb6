"""Reason strings: durations short enough to read at a glance."""

from __future__ import annotations

from spark_jobs.lag.reasons import format_duration


def test_format_duration():
    assert [format_duration(s) for s in (45, 600, 150, 3900)] == ["45s", "10m", "2m30s", "1h05m"]
