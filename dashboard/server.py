"""`lagwatch dashboard`: serve the Streamlit app, and the alert engine beside it.

Why subprocesses: Streamlit owns its server loop and signal handling, and the alert engine
must keep evaluating whatever the web server is doing, so each runs as its own child. This
process supervises them: it passes the config path through $LAGWATCH_CONFIG, logs the URL,
and on SIGTERM or Ctrl-C stops both and waits for them, so no process is left behind.
With nothing to supervise (no engine: `--no-alerts` or `run_alerts = false`) and nothing to
clean up (no login secrets file), it execs Streamlit instead of waiting on it.
"""

from __future__ import annotations

import argparse
import importlib.util
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from dashboard import login_secrets
from lagwatch.config import CONFIG_ENV_VAR, Config

log = logging.getLogger(__name__)

APP = Path(__file__).resolve().with_name("app.py")
ALERT_ENGINE = "alerts.engine"
STOP_TIMEOUT_S = 15
POLL_S = 0.5


def streamlit_command(config: Config, secrets_file: Path | None = None) -> list[str]:
    """`streamlit run app.py` on the configured address; `secrets_file` carries the OIDC login's [auth]."""
    login = ["--secrets.files", str(secrets_file)] if secrets_file is not None else []
    return [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(APP),
        "--server.address",
        config.dashboard.host,
        "--server.port",
        str(config.dashboard.port),
        "--server.headless",
        "true",
        "--browser.gatherUsageStats",
        "false",
        # A served dashboard never reloads its own source; watching files only costs CPU.
        "--server.fileWatcherType",
        "none",
        # Operators view; no "Deploy" or developer menu on a wall screen.
        "--client.toolbarMode",
        "viewer",
        *login,
    ]


def _write_login_secrets(config: Config) -> Path | None:
    """With auth = "oidc": Streamlit's [auth] section in a private file (ConfigError if a secret is unset)."""
    if config.dashboard.auth != "oidc":
        return None
    return login_secrets.write_private(login_secrets.secrets_path(config), login_secrets.auth_section(config))


def _login_note(config: Config) -> str:
    dashboard = config.dashboard
    if dashboard.auth == "oidc":
        return f"OpenID Connect login via {dashboard.oidc_server_metadata_url}, redirect URI {dashboard.redirect_uri}"
    return "no login: anyone who reaches the port may look and act"


def alert_engine_available() -> bool:
    try:
        return importlib.util.find_spec(ALERT_ENGINE) is not None
    except ModuleNotFoundError:
        return False


def alerts_command(config: Config, args: argparse.Namespace) -> list[str]:
    command = [sys.executable, "-m", "lagwatch.cli", "--log-level", getattr(args, "log_level", None) or "INFO"]
    if config.source_path:
        command += ["--config", str(Path(config.source_path).resolve())]
    return [*command, "alerts"]


def child_environment(config: Config) -> dict[str, str]:
    env = dict(os.environ)
    if config.source_path:
        env[CONFIG_ENV_VAR] = str(Path(config.source_path).resolve())
    return env


def _start(name: str, command: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
    # Own session: a terminal's Ctrl-C reaches only this supervisor, which stops children in order.
    process = subprocess.Popen(command, env=env, start_new_session=True)
    log.info("started %s (pid %d)", name, process.pid)
    return process


def _stop(name: str, process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        log.warning("%s did not stop within %d s; killing it", name, STOP_TIMEOUT_S)
        process.kill()
        process.wait()
    log.info("stopped %s", name)


def run(config: Config, args: argparse.Namespace) -> int:
    stop = {"requested": False}

    def request_stop(signum: int, _frame: object) -> None:
        stop["requested"] = True

    secrets_file = _write_login_secrets(config)  # before any child: a missing secret is exit 2, nothing started
    with_alerts = config.dashboard.run_alerts and not args.no_alerts
    if not with_alerts and secrets_file is None:
        _become_streamlit(config)  # nothing left to supervise or clean up: no launcher process stays
    previous = {sig: signal.signal(sig, request_stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    env = child_environment(config)
    children: dict[str, subprocess.Popen[bytes]] = {}
    try:
        children["dashboard"] = _start("dashboard", streamlit_command(config, secrets_file), env)
        if with_alerts:
            if alert_engine_available():
                children["alert engine"] = _start("alert engine", alerts_command(config, args), env)
            else:
                log.warning("dashboard.run_alerts is set but the alert engine (%s) is not installed", ALERT_ENGINE)
        log.info("dashboard at http://%s:%d (%s)", config.dashboard.host, config.dashboard.port, _login_note(config))
        return _supervise(children, stop)
    finally:
        for name, process in reversed(children.items()):
            _stop(name, process)
        if secrets_file is not None:
            secrets_file.unlink(missing_ok=True)
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _become_streamlit(config: Config) -> None:
    """Replace this process with the Streamlit server (never returns): a launcher that would only
    wait for its one child costs a Python process (≈ 34 MB resident) for nothing. Stop signals
    then reach Streamlit directly, which handles them itself."""
    log.info("dashboard at http://%s:%d (%s)", config.dashboard.host, config.dashboard.port, _login_note(config))
    sys.stdout.flush()
    sys.stderr.flush()
    command = streamlit_command(config)
    os.execve(command[0], command, child_environment(config))


def _supervise(children: dict[str, subprocess.Popen[bytes]], stop: dict[str, bool]) -> int:
    """Wait until asked to stop or the web server exits; an engine crash is logged, not fatal."""
    reported: set[str] = set()
    while not stop["requested"]:
        code = children["dashboard"].poll()
        if code is not None:
            log.error("the Streamlit server exited with code %d", code)
            return code or 1
        for name, process in children.items():
            if name != "dashboard" and process.poll() is not None and name not in reported:
                log.error("%s exited with code %d; the dashboard keeps serving", name, process.returncode)
                reported.add(name)
        time.sleep(POLL_S)
    return 0
