"""`lagwatch dashboard` supervises Streamlit and the alert engine: both start with the config
passed through, and SIGTERM stops both (no process left behind)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from dashboard import server
from harness.processes import run_lagwatch, start_lagwatch
from lagwatch import exit_codes
from lagwatch.command_line import lagwatch_command
from lagwatch.config import DASHBOARD_CLIENT_SECRET_ENV, DASHBOARD_COOKIE_SECRET_ENV, load_config
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
    alerts = lagwatch_command(config, "alerts", log_level="DEBUG")
    assert alerts[-1] == "alerts" and str(known_lake.config_path.resolve()) in alerts


@pytest.mark.slow
def test_dashboard_runs_alert_engine_beside_it_and_stops_both(known_lake: KnownLake) -> None:
    text = known_lake.config_path.read_text()
    text = text.replace("[alerts]\nrun = false\n", '[alerts]\nrun = true\nstate_dir = "state/alerts"\n')
    known_lake.config_path.write_text(text)
    process = subprocess.Popen(
        [sys.executable, "-m", "shell.cli", "--config", str(known_lake.config_path), "dashboard"],
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


def _dashboard_settings(lake: KnownLake, **settings: object) -> None:
    """Extra [dashboard] keys in the known lake's config (written right under its [dashboard] header)."""
    lines = "".join(f"{key} = {json.dumps(value)}\n" for key, value in settings.items())
    text = lake.config_path.read_text().replace("[dashboard]\n", f"[dashboard]\n{lines}")
    lake.config_path.write_text(text)


def test_a_non_loopback_host_without_auth_exits_2(known_lake: KnownLake) -> None:
    text = known_lake.config_path.read_text().replace('host = "127.0.0.1"\nport', 'host = "0.0.0.0"\nport')
    known_lake.config_path.write_text(text)
    done = run_lagwatch(known_lake.config_path, "dashboard", timeout_s=60)
    assert done.returncode == exit_codes.BAD_INPUT, done.stderr
    assert (
        "dashboard.host = 0.0.0.0 is not loopback and dashboard.auth = none: "
        "set dashboard.auth or dashboard.allow_anonymous = true"
    ) in done.stderr


@pytest.mark.parametrize("missing", [DASHBOARD_CLIENT_SECRET_ENV, DASHBOARD_COOKIE_SECRET_ENV])
def test_oidc_without_a_secret_exits_2_naming_its_variable(
    known_lake: KnownLake, missing: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _dashboard_settings(
        known_lake, auth="oidc", oidc_server_metadata_url="http://127.0.0.1:9/.well-known/openid-configuration",
        oidc_client_id="lagwatch",
    )  # fmt: skip
    for variable in (DASHBOARD_CLIENT_SECRET_ENV, DASHBOARD_COOKIE_SECRET_ENV):
        monkeypatch.setenv(variable, "s3cret-value-for-the-test")
    monkeypatch.delenv(missing)
    done = run_lagwatch(known_lake.config_path, "dashboard", timeout_s=60)
    assert done.returncode == exit_codes.BAD_INPUT, done.stderr
    assert f"set the environment variable {missing}" in done.stderr
    assert not list(known_lake.root.rglob("secrets-*.toml")), "a secrets file was written anyway"


@pytest.mark.slow
def test_allow_anonymous_serves_a_non_loopback_host(known_lake: KnownLake, tmp_path: Path) -> None:
    text = known_lake.config_path.read_text().replace('host = "127.0.0.1"\nport', 'host = "0.0.0.0"\nport')
    known_lake.config_path.write_text(text)
    _dashboard_settings(known_lake, allow_anonymous=True)
    process = start_lagwatch(known_lake.config_path, tmp_path / "dashboard.log", "dashboard")
    try:
        deadline = time.monotonic() + 90
        while True:  # bound to every interface, so loopback answers too
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{known_lake.port}/_stcore/health", timeout=1):
                    break
            except OSError:
                assert process.poll() is None, (tmp_path / "dashboard.log").read_text()
                assert time.monotonic() < deadline, "dashboard never became healthy"
                time.sleep(0.25)
        # Nothing to supervise ([alerts] run = false) or clean up (no login): the launcher became Streamlit.
        command = _command_line(process.pid)
        assert "streamlit run" in command and _children(process.pid) == [], command
        assert "--server.address 0.0.0.0" in command and "--secrets.files" not in command
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0
