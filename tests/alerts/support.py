"""Helpers for the alert tests: engine subprocesses, and the engine's outbox read from outside."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

from harness.processes import ROOT


def start_engine(config_path: Path, log_path: Path) -> subprocess.Popen[bytes]:
    """`lagwatch alerts` as its own process (so it can be killed with SIGKILL)."""
    return subprocess.Popen(
        [sys.executable, "-m", "shell.cli", "--config", str(config_path), "alerts"],
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
