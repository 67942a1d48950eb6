"""`lagwatch dashboard` supervises Streamlit and the alert engine: both start with the config
passed through, and SIGTERM stops both (no process left behind)."""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from dashboard import server
from lagwatch.config import load_config
from tests.dashboard.conftest import KnownLake


def _children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(p) for p in path.read_text().split()] if path.exists() else []


def _command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except FileNotFoundError:
        return ""


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split()[2]
    except FileNotFoundError:
        return False
    return state != "Z"


def test_streamlit_command_binds_the_configured_address(known_lake: KnownLake) -> None:
    config = load_config(known_lake.config_path)
    command = server.streamlit_command(config)
    assert command[command.index("--server.address") + 1] == config.dashboard.host == "127.0.0.1"
    assert command[command.index("--server.port") + 1] == str(known_lake.port)
    assert command[command.index("--server.headless") + 1] == "true"
    assert command[command.index("--browser.gatherUsageStats") + 1] == "false"
    assert server.child_environment(config)["LAGWATCH_CONFIG"] == str(known_lake.config_path.resolve())
    alerts = server.alerts_command(config, argparse.Namespace(log_level="DEBUG"))
    assert alerts[-1] == "alerts" and str(known_lake.config_path.resolve()) in alerts


@pytest.mark.slow
def test_dashboard_runs_alert_engine_beside_it_and_stops_both(known_lake: KnownLake) -> None:
    text = known_lake.config_path.read_text().replace("run_alerts = false", "run_alerts = true")
    known_lake.config_path.write_text(text + '\n[alerts]\nstate_dir = "state/alerts"\n')
    assert server.alert_engine_available()
    process = subprocess.Popen(
        [sys.executable, "-m", "lagwatch.cli", "--config", str(known_lake.config_path), "dashboard"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{known_lake.port}/_stcore/health", timeout=1):
                    break
            except OSError:
                assert process.poll() is None and time.monotonic() < deadline, "dashboard never became healthy"
                time.sleep(0.25)
        children = _children(process.pid)
        commands = [_command_line(c) for c in children]
        assert len(children) == 2, commands
        assert any("streamlit run" in c and str(known_lake.port) in c for c in commands), commands
        assert any(c.rstrip().endswith("alerts") for c in commands), commands
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0
    assert not any(_alive(c) for c in children)
