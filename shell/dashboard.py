"""`lagwatch dashboard`: the Streamlit server, and the alert engine beside it when `[alerts] run` is on.

Why subprocesses: Streamlit owns its server loop and signal handling, and the alert engine
must keep evaluating whatever the web server is doing, so each runs as its own child. This
process supervises them: it logs the URL, and on SIGTERM or Ctrl-C stops both and waits for
them, so no process is left behind. With nothing to supervise (no engine: `--no-alerts` or
`[alerts] run = false`) and nothing to clean up (no login secrets file), it execs Streamlit
instead of waiting on it.
"""

from __future__ import annotations

import argparse
import logging
import signal
import subprocess
import time

from dashboard import server
from lagwatch import exit_codes
from lagwatch.command_line import lagwatch_command
from lagwatch.config import Config
from lagwatch.listen import listen_refused

log = logging.getLogger(__name__)

STOP_TIMEOUT_S = 15
POLL_S = 0.5


def run(config: Config, args: argparse.Namespace) -> int:
    stop = {"requested": False}

    def request_stop(signum: int, _frame: object) -> None:
        stop["requested"] = True

    secrets_file = server.write_login_secrets(config)  # before any child: a missing secret is exit 2
    refused = listen_refused("dashboard.port", config.dashboard.host, config.dashboard.port)
    if refused:
        log.error("lagwatch dashboard: %s", refused.message("dashboard.port"))
        return exit_codes.FAILED
    with_alerts = config.alerts.run and not args.no_alerts
    if not with_alerts and secrets_file is None:
        server.become_streamlit(config)  # nothing left to supervise or clean up: no launcher process stays
    previous = {sig: signal.signal(sig, request_stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    env = server.child_environment(config)
    children: dict[str, subprocess.Popen[bytes]] = {}
    try:
        children["dashboard"] = _start("dashboard", server.streamlit_command(config, secrets_file), env)
        if with_alerts:
            engine = lagwatch_command(config, "alerts", log_level=getattr(args, "log_level", None) or "INFO")
            children["alert engine"] = _start("alert engine", engine, env)
        log.info(
            "dashboard at http://%s:%d (%s)", config.dashboard.host, config.dashboard.port, server.login_note(config)
        )
        return _supervise(children, stop)
    finally:
        for name, process in reversed(children.items()):
            _stop(name, process)
        if secrets_file is not None:
            secrets_file.unlink(missing_ok=True)
        for sig, handler in previous.items():
            signal.signal(sig, handler)


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
