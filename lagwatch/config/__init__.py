"""One validated configuration model for every Lagwatch process.

Why one model: every part (collectors, Spark job, dashboard, alerts) reads the same
`config.toml`, so a typo must be caught in one place and named precisely. Unknown keys are
errors (``extra="forbid"``), because a silently ignored ``intreval_s`` is how monitoring
quietly stops monitoring.

Secrets never live in the file. They come from environment variables (``LAGWATCH_…``) and
are merged in after validation; a secret-looking key in the file is rejected.

One module per section (`cluster`, `transport`, `collect`, `jmx`, `lake`, `spark`, `lag`,
`dashboard`, `api`, `alerts`, `demo`), the whole in `model`, reading it in `load`. Callers
import from here, never from a module, so sections can move between modules freely.
"""

from __future__ import annotations

from lagwatch.config.alerts import (
    PREVIOUS_ALERTNAME_LABEL,
    RENAMED_RULES,
    AlertReceiver,
    AlertRule,
    AlertsConfig,
    InhibitRule,
)
from lagwatch.config.api import ApiConfig
from lagwatch.config.base import (
    THRESHOLD_KEYS,
    ConfigError,
    Duration,
    OptionalDuration,
    duration_seconds,
    parse_duration,
)
from lagwatch.config.cluster import ClusterConfig, ClusterJmx
from lagwatch.config.collect import CollectConfig
from lagwatch.config.dashboard import DashboardConfig
from lagwatch.config.demo import DemoConfig
from lagwatch.config.jmx import JmxConfig, JmxTarget
from lagwatch.config.lag import LagConfig
from lagwatch.config.lake import LakeConfig
from lagwatch.config.load import CONFIG_ENV_VAR, DEFAULT_CONFIG_PATH, load_config, parse_config
from lagwatch.config.model import Config
from lagwatch.config.network import is_loopback
from lagwatch.config.secrets import (
    API_TOKEN_ENV,
    DASHBOARD_CLIENT_SECRET_ENV,
    DASHBOARD_COOKIE_SECRET_ENV,
    ENV_CLIENT_KEYS,
    JAVA_SECRET_KEYS,
    SECRET_CLIENT_KEYS,
    client_env_var,
    cluster_env_prefix,
    named_cluster_env_var,
)
from lagwatch.config.spark import SparkConfig
from lagwatch.config.transport import TransportConfig

__all__ = [
    "API_TOKEN_ENV",
    "CONFIG_ENV_VAR",
    "DASHBOARD_CLIENT_SECRET_ENV",
    "DASHBOARD_COOKIE_SECRET_ENV",
    "DEFAULT_CONFIG_PATH",
    "ENV_CLIENT_KEYS",
    "JAVA_SECRET_KEYS",
    "PREVIOUS_ALERTNAME_LABEL",
    "RENAMED_RULES",
    "SECRET_CLIENT_KEYS",
    "THRESHOLD_KEYS",
    "AlertReceiver",
    "AlertRule",
    "AlertsConfig",
    "ApiConfig",
    "ClusterConfig",
    "ClusterJmx",
    "CollectConfig",
    "Config",
    "ConfigError",
    "DashboardConfig",
    "DemoConfig",
    "Duration",
    "InhibitRule",
    "JmxConfig",
    "JmxTarget",
    "LagConfig",
    "LakeConfig",
    "OptionalDuration",
    "SparkConfig",
    "TransportConfig",
    "client_env_var",
    "cluster_env_prefix",
    "duration_seconds",
    "is_loopback",
    "load_config",
    "named_cluster_env_var",
    "parse_config",
    "parse_duration",
]
