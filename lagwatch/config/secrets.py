"""Which settings are secrets, the environment variable each comes from, and the checks that
keep them out of the file.

Secrets never live in config.toml: they come from ``LAGWATCH_…`` variables (merged in by
`lagwatch.config.env` after validation), and a secret-looking key in the file is refused with
the variable it belongs in.
"""

from __future__ import annotations

import re
from typing import Any

from lagwatch.config.base import ConfigError

#: librdkafka properties that carry secrets. They must come from the environment
#: (`client_env_var` names the variable of each).
SECRET_CLIENT_KEYS = frozenset(
    {
        "sasl.password",
        "ssl.key.password",
        "ssl.keystore.password",
        "sasl.oauthbearer.client.secret",  # OAUTHBEARER/OIDC client credentials
        "sasl.oauthbearer.assertion.private.key.passphrase",  # OIDC JWT-bearer assertion key
    }
)
#: Client properties set from the environment: every secret, and the SASL user name (it differs per deployment).
ENV_CLIENT_KEYS = ("sasl.username", *sorted(SECRET_CLIENT_KEYS))

#: Java Kafka client settings that hold secrets (refused in `[spark] kafka_options`).
JAVA_SECRET_KEYS = frozenset({"sasl.jaas.config", "ssl.keystore.key"})

#: Environment variables holding the dashboard's and the API's secrets (never the file).
DASHBOARD_CLIENT_SECRET_ENV = "LAGWATCH_DASHBOARD_OIDC_CLIENT_SECRET"
DASHBOARD_COOKIE_SECRET_ENV = "LAGWATCH_DASHBOARD_COOKIE_SECRET"
API_TOKEN_ENV = "LAGWATCH_API_TOKEN"


def client_env_var(section: str, key: str) -> str:
    """The variable that sets `key` of [section] client: cluster, sasl.password → LAGWATCH_CLUSTER_SASL_PASSWORD."""
    return f"LAGWATCH_{section.upper()}_{env_suffix(key)}"


def env_suffix(key: str) -> str:
    """A client property as the end of a variable name: sasl.password → SASL_PASSWORD."""
    return key.upper().replace(".", "_")


def cluster_env_prefix(name: str) -> str:
    """LAGWATCH_CLUSTER_<NAME>_ for a named cluster: upper case, anything but A-Z and 0-9 as `_`."""
    return "LAGWATCH_CLUSTER_" + re.sub(r"[^A-Z0-9]", "_", name.upper()) + "_"


def named_cluster_env_var(name: str, key: str) -> str:
    """The variable that sets `key` for the cluster called `name`: LAGWATCH_CLUSTER_PROD_EU_SASL_PASSWORD."""
    return cluster_env_prefix(name) + env_suffix(key)


def check_client_props(props: dict[str, Any]) -> dict[str, str]:
    """librdkafka wants string values; secrets are refused here so they never sit in a file."""
    for key in props:
        if key in SECRET_CLIENT_KEYS:
            raise ValueError(f"'{key}' is a secret: set it through the environment, not the file")
    return {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in props.items()}


def refuse_secret_keys(data: Any, secret_keys: dict[str, str]) -> Any:
    """A secret written into the file is named with the variable it belongs in (not just "unknown key")."""
    for key, env_var in secret_keys.items():
        if isinstance(data, dict) and key in data:
            raise ValueError(f"'{key}' is a secret: set it through the environment variable {env_var}, not the file")
    return data


def required_secret(value: str, env_var: str, why: str) -> str:
    """`value`, or a ConfigError naming the variable: demanded only by the process that needs it."""
    if not value:
        raise ConfigError(f"{why}: set the environment variable {env_var} (secrets never live in the config file)")
    return value
