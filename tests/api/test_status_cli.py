"""`lagwatch status` asks the running API's /healthz and /readyz and says whether the lake is fresh."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from lagwatch import lake as lakelib
from tests.api.conftest import CLUSTER, RunningApi, lag_row, write_lake


def _status(api: RunningApi) -> subprocess.CompletedProcess[str]:
    """`lagwatch status` with a stack state naming this API (as `lagwatch up` writes it)."""
    config = api.log.parent / "config.toml"
    state = api.log.parent / "state" / "stack.json"
    state.parent.mkdir(exist_ok=True)
    state.write_text(json.dumps({"dashboard_url": api.url, "api_url": api.url, "components": {"api": api.process.pid}}))
    command = [sys.executable, "-m", "shell.cli", "--config", str(config), "status"]
    return subprocess.run(command, capture_output=True, text=True, timeout=60)


def test_status_reports_a_fresh_lake_as_ready(api: RunningApi) -> None:
    result = _status(api)
    line = next(line for line in result.stdout.splitlines() if line.startswith("api http"))
    assert api.url in line and " ready, lake " in line, result.stdout
    assert "api                  pid" in result.stdout and "running" in result.stdout


def test_status_reports_a_stale_lake_as_not_ready(tmp_path: Path, start_api: Any) -> None:
    stale = tmp_path / "stale"
    old = lakelib.utc_now() - dt.timedelta(minutes=5)
    status = {"cluster": CLUSTER, "group_id": "g", "status": "OK", "window_start": old, "updated_at": old}
    write_lake(stale, {"lag_1m": [lag_row(old, "g", "t", 0, 1, 1)], "group_status": [status]})
    result = _status(start_api(stale, ready_max_age_s=60))
    line = next(line for line in result.stdout.splitlines() if line.startswith("api http"))
    assert "NOT READY (bound 60 s)" in line, result.stdout
    assert result.returncode == 1
