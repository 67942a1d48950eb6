"""Helpers for the alert tests: polling with a deadline, and engine subprocesses with a config file."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]


def wait_until(predicate: Callable[[], Any], timeout_s: float, what: str) -> Any:
    """Poll until `predicate()` is truthy; fail naming `what` (a deadline, not a timed assertion)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        result = predicate()
        if result:
            return result
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")


def _toml_value(value: Any) -> str:
    return json.dumps(value)  # JSON strings, numbers, booleans and arrays are valid TOML


def _inline_table(values: dict[str, Any]) -> str:
    return "{" + ", ".join(f"{json.dumps(k)} = {_toml_value(v)}" for k, v in values.items()) + "}"


def write_config(path: Path, sections: dict[str, dict[str, Any]], rules: list[dict[str, Any]],
                 receivers: list[dict[str, Any]]) -> Path:  # fmt: skip
    """A config.toml for an engine subprocess (flat sections, arrays of tables for rules/receivers)."""
    lines: list[str] = []
    for name, values in sections.items():
        lines.append(f"[{name}]")
        for key, value in values.items():
            lines.append(f"{key} = {_inline_table(value) if isinstance(value, dict) else _toml_value(value)}")
    for kind, items in (("receivers", receivers), ("rules", rules)):
        for item in items:
            lines.append(f"[[alerts.{kind}]]")
            lines += [f"{json.dumps(k)} = {_toml_value(v)}" for k, v in item.items()]
    path.write_text("\n".join(lines) + "\n")
    return path


def start_engine(config_path: Path, log_path: Path) -> subprocess.Popen[bytes]:
    """`lagwatch alerts` as its own process (so it can be killed with SIGKILL)."""
    return subprocess.Popen(
        [sys.executable, "-m", "lagwatch.cli", "--config", str(config_path), "alerts"],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=log_path.open("ab"),
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


def outbox_rows(state_dir: Path) -> list[tuple[str, int, str, int]]:
    """(incident_key, seq, status, attempts) from an engine's outbox, read without locking it."""
    db_path = state_dir / "engine.sqlite"
    if not db_path.exists():
        return []
    db = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=5)
    try:
        return db.execute("SELECT incident_key, seq, status, attempts FROM outbox ORDER BY id").fetchall()
    except sqlite3.OperationalError:
        return []
    finally:
        db.close()
