"""Merging the environment into a validated config: secrets, and the per-deployment overrides.

Why after validation: the file is checked on its own (a secret in it is refused), and the
variables only fill in what the file may not hold.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lagwatch.config.secrets import (
    API_TOKEN_ENV,
    DASHBOARD_CLIENT_SECRET_ENV,
    DASHBOARD_COOKIE_SECRET_ENV,
    ENV_CLIENT_KEYS,
    client_env_var,
    named_cluster_env_var,
)

if TYPE_CHECKING:
    from lagwatch.config.model import Config


def apply_env(config: Config, environ: dict[str, str]) -> None:
    """Secrets and deployment-specific overrides come from LAGWATCH_* environment variables.

    LAGWATCH_CLUSTER_SASL_PASSWORD (and its siblings) is the one-cluster form's; every cluster also
    reads its own LAGWATCH_CLUSTER_<NAME>_SASL_PASSWORD, which wins.
    """
    for key in ENV_CLIENT_KEYS:
        _apply_client_key(config, environ, key)
    if environ.get("LAGWATCH_BOOTSTRAP_SERVERS") and len(config.clusters) == 1:
        config.cluster.bootstrap_servers = environ["LAGWATCH_BOOTSTRAP_SERVERS"]
    # Read here, demanded only by the server that needs them (dashboard.oidc_secrets, api.token),
    # so `lagwatch sql` on an analyst's machine runs without the dashboard's secrets.
    config.dashboard._oidc_client_secret = environ.get(DASHBOARD_CLIENT_SECRET_ENV, "")
    config.dashboard._cookie_secret = environ.get(DASHBOARD_COOKIE_SECRET_ENV, "")
    config.api._token = environ.get(API_TOKEN_ENV, "")


def _apply_client_key(config: Config, environ: dict[str, str], key: str) -> None:
    """One client property: the one-cluster variable, then each named cluster's, then the transport's."""
    if environ.get(client_env_var("cluster", key)) and len(config.clusters) == 1:
        config.cluster.client[key] = environ[client_env_var("cluster", key)]
    for cluster in config.clusters:
        if environ.get(named_cluster_env_var(cluster.name, key)):
            cluster.client[key] = environ[named_cluster_env_var(cluster.name, key)]
    if environ.get(client_env_var("transport", key)):
        config.transport.client[key] = environ[client_env_var("transport", key)]
