"""The `[auth]` section Streamlit's OpenID Connect login reads, written from config and environment.

Why a generated file: `st.login` reads its provider settings only from Streamlit's secrets
(secrets.toml), while Lagwatch keeps settings in config.toml and secrets in LAGWATCH_* variables.
`lagwatch dashboard` therefore writes the section at start into a file of its own in the state
folder, readable by its owner alone (0600, in a 0700 folder, created with that mode so it is never
readable for an instant), hands it to Streamlit with `--secrets.files`, and deletes it on stop.
It never lands in the repository or in a `.streamlit/` folder someone might commit.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from lagwatch.config import Config


def _toml_string(value: str) -> str:
    # A JSON string (ASCII, escapes \" \\ \n \uXXXX) is also a valid TOML basic string.
    return json.dumps(value)


def auth_section(config: Config) -> str:
    """secrets.toml text for `[dashboard] auth = "oidc"`; ConfigError naming the variable if a secret is unset."""
    dashboard = config.dashboard
    client_secret, cookie_secret = dashboard.oidc_secrets()
    values = {
        "redirect_uri": dashboard.redirect_uri,
        "cookie_secret": cookie_secret,
        "client_id": dashboard.oidc_client_id,
        "client_secret": client_secret,
        "server_metadata_url": dashboard.oidc_server_metadata_url,
    }
    lines = ["[auth]", *(f"{key} = {_toml_string(value)}" for key, value in values.items())]
    lines += ["", "[auth.client_kwargs]", f"scope = {_toml_string(' '.join(dashboard.oidc_scopes))}", ""]
    return "\n".join(lines)


def secrets_path(config: Config) -> Path:
    """One file per dashboard port, so two dashboards over one config do not overwrite each other's."""
    return config.resolve_path("state") / "dashboard" / f"secrets-{config.dashboard.port}.toml"


def write_private(path: Path, text: str) -> Path:
    """`text` into `path`, mode 0600 from its first byte, replacing what was there atomically."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    temporary = path.with_name(f".{path.name}.{os.getpid()}")
    temporary.unlink(missing_ok=True)
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as out:
        out.write(text)
    os.replace(temporary, path)
    return path
