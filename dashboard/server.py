"""How to start the Streamlit server for a config: its command line, environment and login secrets.

Streamlit owns its server loop and signal handling, so it always runs as its own process
(`streamlit run dashboard/app.py`) with the config path in $LAGWATCH_CONFIG. Whether anything
runs beside it (the alert engine) is the shell's choice (`shell.dashboard`).
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

from dashboard import login_secrets
from lagwatch.config import CONFIG_ENV_VAR, Config

log = logging.getLogger(__name__)

APP = Path(__file__).resolve().with_name("app.py")


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


def write_login_secrets(config: Config) -> Path | None:
    """With auth = "oidc": Streamlit's [auth] section in a private file (ConfigError if a secret is unset)."""
    if config.dashboard.auth != "oidc":
        return None
    return login_secrets.write_private(login_secrets.secrets_path(config), login_secrets.auth_section(config))


def login_note(config: Config) -> str:
    dashboard = config.dashboard
    if dashboard.auth == "oidc":
        return f"OpenID Connect login via {dashboard.oidc_server_metadata_url}, redirect URI {dashboard.redirect_uri}"
    return "no login: anyone who reaches the port may look and act"


def child_environment(config: Config) -> dict[str, str]:
    env = dict(os.environ)
    if config.source_path:
        env[CONFIG_ENV_VAR] = str(Path(config.source_path).resolve())
    return env


def become_streamlit(config: Config) -> None:
    """Replace this process with the Streamlit server (never returns): a launcher that would only
    wait for its one child costs a whole Python process's memory for nothing (bench/RECORDS.md,
    "Footprint"). Stop signals then reach Streamlit directly, which handles them itself."""
    log.info("dashboard at http://%s:%d (%s)", config.dashboard.host, config.dashboard.port, login_note(config))
    sys.stdout.flush()
    sys.stderr.flush()
    command = streamlit_command(config)
    os.execve(command[0], command, child_environment(config))
