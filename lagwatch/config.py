"""One validated configuration model for every Lagwatch process.

Why one model: every part (collectors, Spark job, dashboard, alerts) reads the same
`config.toml`, so a typo must be caught in one place and named precisely. Unknown keys are
errors (``extra="forbid"``), because a silently ignored ``intreval_s`` is how monitoring
quietly stops monitoring.

Secrets never live in the file. They come from environment variables (``LAGWATCH_…``) and
are merged in after validation; a secret-looking key in the file is rejected.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import re
import tomllib
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)

log = logging.getLogger(__name__)

DEFAULT_CONFIG_PATH = "config.toml"
CONFIG_ENV_VAR = "LAGWATCH_CONFIG"

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


def client_env_var(section: str, key: str) -> str:
    """The variable that sets `key` of [section] client: cluster, sasl.password → LAGWATCH_CLUSTER_SASL_PASSWORD."""
    return f"LAGWATCH_{section.upper()}_{_env_suffix(key)}"


def _env_suffix(key: str) -> str:
    """A client property as the end of a variable name: sasl.password → SASL_PASSWORD."""
    return key.upper().replace(".", "_")


#: Java Kafka client settings that hold secrets (refused in `[spark] kafka_options`).
JAVA_SECRET_KEYS = frozenset({"sasl.jaas.config", "ssl.keystore.key"})

_MAVEN_COORDINATE = re.compile(r"[\w.-]+:[\w.-]+:[\w.+-]+")


class ConfigError(Exception):
    """A configuration problem, already phrased for the operator (file and key named)."""


_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")
_UNIT_SECONDS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}


def duration_seconds(text: str) -> float:
    """ "90s", "2m", "1h30m", "0" -> seconds; anything else is a ValueError saying what is accepted."""
    text = text.strip()
    if text == "0":
        return 0.0
    parts = _DURATION_PART.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise ValueError(f'bad duration {text!r} (use e.g. "30s", "2m", "1h30m")')
    return sum(float(n) * _UNIT_SECONDS[u] for n, u in parts)


def parse_duration(text: str, where: str) -> float:
    """`duration_seconds`, with the failure as a ConfigError naming `where`."""
    try:
        return duration_seconds(text)
    except ValueError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def _valid_duration(text: str) -> str:
    duration_seconds(text)
    return text


#: A duration as written in the file ("30s", "1h30m"), checked when the config loads so every
#: command refuses a bad one, not only the process that reads it.
Duration = Annotated[str, AfterValidator(_valid_duration)]


def _valid_optional_duration(text: str) -> str:
    return _valid_duration(text) if text else text


#: A Duration, or "" for "not set".
OptionalDuration = Annotated[str, AfterValidator(_valid_optional_duration)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


def _check_client_props(props: dict[str, Any]) -> dict[str, str]:
    """librdkafka wants string values; secrets are refused here so they never sit in a file."""
    for key in props:
        if key in SECRET_CLIENT_KEYS:
            raise ValueError(f"'{key}' is a secret: set it through the environment, not the file")
    return {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in props.items()}


def _compiled_regexes(patterns: list[str]) -> list[str]:
    """Refuse a pattern that does not compile when the config loads, not at the first cycle."""
    for pattern in patterns:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ValueError(f"bad regex {pattern!r}: {exc}") from exc
    return patterns


class TransportConfig(_Model):
    #: Empty: the first monitored cluster ([cluster], or the first [[clusters]] entry) carries the samples.
    bootstrap_servers: str = ""
    samples_topic: str = Field("lagwatch.samples", min_length=1)
    samples_partitions: int = Field(6, ge=1)
    #: Replication factor of the topics Lagwatch creates (samples, collector coordination, alert
    #: leader). Unset: min(3, live brokers). Topics that already exist are left as they are.
    replication_factor: int | None = Field(None, ge=1)
    #: retention.ms of the samples topic: how far back `lagwatch stream` can replay (e.g. a new checkpoint).
    samples_retention_hours: float = Field(168, gt=0)
    #: retention.ms of the coordination and alert-leader topics (they carry no data of their own).
    internal_retention_hours: float = Field(24, gt=0)
    client: dict[str, Any] = Field(default_factory=dict)
    #: librdkafka producer settings passed through as they are.
    producer: dict[str, Any] = Field(default_factory=dict)

    @field_validator("client", "producer")
    @classmethod
    def _client_props(cls, props: dict[str, Any]) -> dict[str, str]:
        return _check_client_props(props)


class CollectConfig(_Model):
    interval_s: float = Field(15, gt=0)
    #: Wall-clock limit for one target's scrape; never longer than the interval.
    timeout_s: float = Field(5, gt=0)
    #: Consumer groups whose id matches any allow regex and no deny regex are collected.
    groups_allow: list[str] = Field(default_factory=lambda: [".*"])
    groups_deny: list[str] = Field(default_factory=list)
    topics_allow: list[str] = Field(default_factory=lambda: [".*"])
    topics_deny: list[str] = Field(default_factory=lambda: ["^__"])
    #: Parallel admin requests in flight (ListOffsets batches, group offset fetches).
    admin_concurrency: int = Field(16, ge=1)
    #: Partitions per ListOffsets request.
    list_offsets_batch: int = Field(1000, ge=1)
    #: Describe every collected group each cycle (state, member count). Costs one DescribeGroups
    #: request per group; turn off on very large clusters if the cycle gets close to timeout_s.
    describe_groups: bool = True
    #: Groups per describe_consumer_groups call.
    describe_groups_batch: int = Field(100, ge=1)
    #: Seconds between two reads of a topic's retention settings (DescribeConfigs: cleanup.policy,
    #: retention.ms, retention.bytes); a topic new to the collector is read in its first cycle.
    topic_config_refresh_s: float = Field(300, gt=0)
    #: Samples buffered in the producer before produce() blocks (backpressure, not loss).
    buffer_samples: int = Field(200_000, ge=100)
    #: Collector instances coordinate through this consumer group and topic (scale-out).
    coordination_group: str = "lagwatch-collectors"
    coordination_topic: str = "lagwatch.collect.targets"
    session_timeout_ms: int = Field(10_000, ge=1000)
    #: Set to false to scrape every target from this instance without coordination.
    coordinate: bool = True
    instance_id: str = ""

    # -- commit log (docs/admin-collector.md, "Commit log") --
    #: Read every offset commit from `__consumer_offsets`: "auto" where the cluster has the topic
    #: and lets us read it (else OffsetFetch, said in a log line), "on" (the same, but a cycle
    #: without it is a scrape error), "off" (OffsetFetch only).
    commit_log: Literal["auto", "on", "off"] = "auto"

    @field_validator("groups_allow", "groups_deny", "topics_allow", "topics_deny")
    @classmethod
    def _regexes_compile(cls, patterns: list[str]) -> list[str]:
        return _compiled_regexes(patterns)

    @model_validator(mode="after")
    def _timeout_within_interval(self) -> CollectConfig:
        if self.timeout_s > self.interval_s:
            raise ValueError(f"timeout_s ({self.timeout_s}) must not exceed interval_s ({self.interval_s})")
        return self


class JmxTarget(_Model):
    """One JMX endpoint: a broker (``broker`` set) or a consumer client (``client_id`` set)."""

    broker: str | None = None
    client_id: str | None = None
    host: str = "127.0.0.1"
    port: int = Field(9999, ge=1, le=65535)
    backend: Literal["jpype", "jmxquery", "prometheus"] = "jpype"
    #: For backend = "prometheus": the exporter's /metrics URL.
    url: str | None = None
    username: str | None = None
    #: Name of the environment variable holding the password (never the password itself).
    password_env: str | None = None
    timeout_s: float | None = Field(None, gt=0)

    @model_validator(mode="after")
    def _backend_needs(self) -> JmxTarget:
        if self.backend == "prometheus" and not self.url:
            raise ValueError("backend 'prometheus' needs url = \"http://host:port/metrics\"")
        if self.broker is None and self.client_id is None:
            raise ValueError("set broker (broker JMX) or client_id (consumer-client JMX)")
        return self

    @property
    def name(self) -> str:
        """Stable target name: used for coordination, the `up` sample and logs."""
        who = f"broker-{self.broker}" if self.broker is not None else f"client-{self.client_id}"
        where = self.url if self.backend == "prometheus" else f"{self.host}:{self.port}"
        return f"{who}@{where}"

    def password(self) -> str | None:
        return os.environ.get(self.password_env) if self.password_env else None


class JmxConfig(_Model):
    targets: list[JmxTarget] = Field(default_factory=list)
    #: Path to a JRE's libjvm for the jpype backend; empty: let JPype find it.
    jvm_path: str = ""


#: Threshold keys a group or a whole cluster may override (rules of the same names in docs/rollups.md).
THRESHOLD_KEYS = frozenset({"warn_lag", "warn_time_lag_s", "stop_after_s"})


def _check_threshold_keys(values: dict[str, float], whose: str) -> None:
    unknown = sorted(set(values) - THRESHOLD_KEYS)
    if unknown:
        raise ValueError(f"{whose}: unknown threshold(s) {unknown}; allowed: {sorted(THRESHOLD_KEYS)}")


class ClusterJmx(_Model):
    """A cluster's own JMX endpoints ([[clusters.jmx.targets]] or [[cluster.jmx.targets]])."""

    targets: list[JmxTarget] = Field(default_factory=list)


class ClusterConfig(_Model):
    """One monitored cluster: `[cluster]` (the one-cluster form) or an entry of `[[clusters]]`."""

    name: str = Field("local", min_length=1)
    #: Empty: start the embedded tansu broker on a free loopback port (the one-cluster form only).
    bootstrap_servers: str = ""
    #: librdkafka properties passed through as they are (security.protocol, sasl.mechanism,
    #: ssl.ca.location, …). Secrets come from the environment (`named_cluster_env_var`).
    client: dict[str, Any] = Field(default_factory=dict)
    #: This cluster's JMX targets; in the one-cluster form `[[jmx.targets]]` adds to them.
    jmx: ClusterJmx = Field(default_factory=ClusterJmx)
    #: Unset: `[collect] groups_allow` / `groups_deny` (filled in when the config loads).
    groups_allow: list[str] | None = None
    groups_deny: list[str] | None = None
    #: Thresholds for every group of this cluster (keys as in `[lag.group_thresholds]`, which
    #: still wins for the groups it names).
    lag: dict[str, float] = Field(default_factory=dict)

    @field_validator("client")
    @classmethod
    def _client_props(cls, props: dict[str, Any]) -> dict[str, str]:
        return _check_client_props(props)

    @field_validator("groups_allow", "groups_deny")
    @classmethod
    def _regexes_compile(cls, patterns: list[str] | None) -> list[str] | None:
        return None if patterns is None else _compiled_regexes(patterns)

    @model_validator(mode="after")
    def _known_lag_keys(self) -> ClusterConfig:
        _check_threshold_keys(self.lag, "lag")
        return self


class LakeConfig(_Model):
    path: str = "lake"
    #: DuckDB file holding only views over the lake (opened read-only by readers).
    duckdb_path: str = "lagwatch.duckdb"
    #: Days to keep per table; tables not named keep `default_retention_days`.
    default_retention_days: float = Field(30, gt=0)
    retention_days: dict[str, float] = Field(default_factory=dict)
    #: Files per table partition that trigger compaction.
    compact_after_files: int = Field(32, ge=2)
    #: Replaced files are deleted only after this many seconds (running queries keep them).
    grace_period_s: float = Field(600, ge=0)

    @field_validator("retention_days")
    @classmethod
    def _retention_names_tables(cls, days: dict[str, float]) -> dict[str, float]:
        from lagwatch.lake import TABLES

        unknown = sorted(set(days) - set(TABLES))
        if unknown:
            raise ValueError(f"unknown table(s) {unknown}; lake tables: {sorted(TABLES)}")
        for table, value in days.items():
            if value <= 0:
                raise ValueError(f"{table}: retention must be more than 0 days, got {value}")
        return days


class SparkConfig(_Model):
    master: str = "local[2]"
    trigger_s: float = Field(2, gt=0)
    checkpoint_dir: str = "state/checkpoints"
    #: python: the bundled confluent-kafka data source; kafka: Spark's native source (needs the
    #: connector: `jars` or `packages` below, docs/operations.md "Which Kafka source").
    source: Literal["python", "kafka"] = "python"
    #: Jars put on Spark's classpath (`spark.jars`): files, or folders whose every *.jar is taken;
    #: a relative path is resolved against the config file's folder. The way to the native source's
    #: connector where Maven Central is out of reach.
    jars: list[str] = Field(default_factory=list)
    #: Maven coordinates Spark resolves and fetches at start (`spark.jars.packages`), e.g.
    #: "org.apache.spark:spark-sql-kafka-0-10_2.13:<PySpark version>".
    packages: list[str] = Field(default_factory=list)
    #: Java Kafka client settings for `source = "kafka"` only, added to those translated from the
    #: librdkafka `client` settings (these win): what librdkafka has no name for, such as a JKS
    #: truststore. Secrets are refused here; they come from the environment.
    kafka_options: dict[str, str] = Field(default_factory=dict)
    starting_offsets: Literal["earliest", "latest"] = "earliest"
    #: Records per micro-batch at most, when a backlog waits (live batches are far smaller). A batch
    #: has a fixed cost (a batch of a few records takes as long), which bigger batches pay less
    #: often, up to a point past which memory grows and throughput does not (docs/performance.md).
    max_rows_per_batch: int = Field(1_000_000, ge=1)
    watermark_s: float = Field(30, ge=0)
    #: Largest sample record accepted (bytes); larger goes to dead_letters.
    max_record_bytes: int = Field(65_536, ge=256)
    #: Extra Spark settings (spark.sql.shuffle.partitions defaults to the core count).
    conf: dict[str, str] = Field(default_factory=dict)
    #: Python Kafka source: seconds per metadata request and retries before the job fails with the
    #: bootstrap servers named (bounded, never a silent stall).
    kafka_timeout_s: float = Field(10, gt=0)
    kafka_retries: int = Field(2, ge=0)
    #: A running job keeps retrying an unreachable Kafka (restarting its queries from the checkpoint)
    #: this long before it exits with code 3; at start-up it fails at once.
    kafka_outage_s: float = Field(600, gt=0)
    #: Python Kafka source: a read that gets no record for this long fails its batch (naming the
    #: servers and the offset range) instead of hanging; the running job then retries as above.
    kafka_read_timeout_s: float = Field(120, gt=0)
    #: Seconds between compaction/retention passes over the lake, run in the driver.
    maintenance_interval_s: float = Field(60, gt=0)

    @field_validator("packages")
    @classmethod
    def _maven_coordinates(cls, packages: list[str]) -> list[str]:
        for package in packages:
            if not _MAVEN_COORDINATE.fullmatch(package):
                raise ValueError(f"{package!r} is not a Maven coordinate group:artifact:version")
        return packages

    @field_validator("kafka_options")
    @classmethod
    def _no_java_secrets(cls, options: dict[str, str]) -> dict[str, str]:
        for key in options:
            if key in JAVA_SECRET_KEYS or "password" in key:
                raise ValueError(
                    f"'{key}' carries a secret: set the librdkafka form through the environment "
                    "(e.g. LAGWATCH_TRANSPORT_SASL_PASSWORD), which the native source translates"
                )
        return options


class LagConfig(_Model):
    """How lag is judged: Burrow's sliding window of commits, with group membership as evidence.

    Each knob's rule is in the rules table (spark_jobs/lag/rules.py ``RULES``, and docs/rollups.md
    generated from it); docs/rollups.md also says how each knob moves detection time against false alarms.
    """

    #: The commit window every rule looks back over (rewind, stop's usual gap, lag_rising).
    window_s: float = Field(300, gt=0)
    #: Rule stop: the silence past which lag > 0 is STOP (unless the usual commit gap is longer).
    stop_after_s: float = Field(30, gt=0)
    #: Rule stop_empty: collector cycles in a row without members.
    empty_cycles: int = Field(2, ge=1)
    #: Rule stall_owned: collector cycles in a row at one committed offset.
    stall_cycles: int = Field(2, ge=2)
    #: Minimum (log_end_offset, ts) points before time lag is interpolated.
    min_history_points: int = Field(2, ge=2)
    #: Most (log_end_offset, ts) points kept per partition; older points are thinned, not dropped.
    history_points: int = Field(120, ge=4)
    #: Rules stall (no commit log, or commits) and lag_rising: observations (or commits) needed first.
    min_window_points: int = Field(3, ge=2)
    #: Per-group overrides: {"group-id" = {warn_lag = 1000, stop_after_s = 300}}.
    #: Keys: warn_lag, warn_time_lag_s (rules of the same names), stop_after_s.
    group_thresholds: dict[str, dict[str, float]] = Field(default_factory=dict)

    @property
    def window_ms(self) -> int:
        """window_s in milliseconds, the unit of sample timestamps: converted here, once."""
        return int(self.window_s * 1000)

    @field_validator("group_thresholds")
    @classmethod
    def _known_threshold_keys(cls, groups: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
        for group, values in groups.items():
            _check_threshold_keys(values, f"group {group!r}")
        return groups


#: Environment variables holding the dashboard's and the API's secrets (never the file).
DASHBOARD_CLIENT_SECRET_ENV = "LAGWATCH_DASHBOARD_OIDC_CLIENT_SECRET"
DASHBOARD_COOKIE_SECRET_ENV = "LAGWATCH_DASHBOARD_COOKIE_SECRET"
API_TOKEN_ENV = "LAGWATCH_API_TOKEN"


def is_loopback(host: str) -> bool:
    """True for an address only this machine can reach: 127.0.0.0/8, ::1 or "localhost".

    Any other name counts as reachable from outside: resolving it here would make the answer
    depend on the resolver of whichever machine loads the config.
    """
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _refuse_open_door(section: str, host: str, auth: str, allow_anonymous: bool) -> None:
    """A server on an outside address with no authentication must be asked for in so many words."""
    if auth == "none" and not allow_anonymous and not is_loopback(host):
        raise ValueError(
            f"{section}.host = {host or '(all interfaces)'} is not loopback and {section}.auth = none: "
            f"set {section}.auth or {section}.allow_anonymous = true"
        )


def _refuse_secret_keys(data: Any, secret_keys: dict[str, str]) -> Any:
    """A secret written into the file is named with the variable it belongs in (not just "unknown key")."""
    for key, env_var in secret_keys.items():
        if isinstance(data, dict) and key in data:
            raise ValueError(f"'{key}' is a secret: set it through the environment variable {env_var}, not the file")
    return data


def _required_secret(value: str, env_var: str, why: str) -> str:
    if not value:
        raise ConfigError(f"{why}: set the environment variable {env_var} (secrets never live in the config file)")
    return value


class DashboardConfig(_Model):
    host: str = "127.0.0.1"
    port: int = Field(8501, ge=1, le=65535)
    refresh_s: float = Field(10, gt=0)
    #: Start the alert engine beside the Streamlit server.
    run_alerts: bool = True

    # -- who may look, who may act (docs/dashboard.md, "Authentication") --
    #: none: anyone who reaches the port may look and act (refused off loopback unless
    #: allow_anonymous); oidc: log in through an OpenID Connect provider.
    auth: Literal["none", "oidc"] = "none"
    #: Serve a non-loopback host with auth = "none" anyway (e.g. behind a proxy that authenticates).
    allow_anonymous: bool = False
    #: auth = "oidc": the provider's discovery document (…/.well-known/openid-configuration).
    oidc_server_metadata_url: str = ""
    oidc_client_id: str = ""
    #: Scopes asked for at login; add the one your provider needs to put groups in the ID token.
    oidc_scopes: list[str] = Field(default_factory=lambda: ["openid", "email", "profile"])
    #: The address browsers use to reach the dashboard; the redirect URI registered with the
    #: provider is this plus "/oauth2callback". Empty: http://host:port.
    public_url: str = ""
    #: Users who may act (create or expire silences, run SQL, run a backtest): emails or subjects.
    allowed_users: list[str] = Field(default_factory=list)
    #: ID-token claim holding the user's groups (a dotted path reaches a nested claim, e.g.
    #: "realm_access.roles"); members of any allowed_groups may act.
    groups_claim: str = "groups"
    allowed_groups: list[str] = Field(default_factory=list)

    _oidc_client_secret: str = PrivateAttr("")
    _cookie_secret: str = PrivateAttr("")

    @model_validator(mode="before")
    @classmethod
    def _no_secrets_in_file(cls, data: Any) -> Any:
        secrets = {"oidc_client_secret": DASHBOARD_CLIENT_SECRET_ENV, "client_secret": DASHBOARD_CLIENT_SECRET_ENV}
        return _refuse_secret_keys(data, {**secrets, "cookie_secret": DASHBOARD_COOKIE_SECRET_ENV})

    @model_validator(mode="after")
    def _auth_settings(self) -> DashboardConfig:
        _refuse_open_door("dashboard", self.host, self.auth, self.allow_anonymous)
        if self.auth == "oidc":
            missing = [k for k in ("oidc_server_metadata_url", "oidc_client_id") if not getattr(self, k)]
            if not self.public_url and not is_loopback(self.host):
                missing.append("public_url (the address browsers use, for the redirect URI)")
            if missing:
                raise ValueError(f"auth = oidc needs {' and '.join(f'dashboard.{k}' for k in missing)}")
        return self

    @property
    def redirect_uri(self) -> str:
        """Where the provider sends the browser back after login (register it with the provider)."""
        base = self.public_url or f"http://{self.host}:{self.port}"
        return f"{base.rstrip('/')}/oauth2callback"

    def oidc_secrets(self) -> tuple[str, str]:
        """(client secret, cookie secret) from the environment; a ConfigError naming the variable if unset."""
        why = "dashboard.auth = oidc needs the {}"
        return (
            _required_secret(self._oidc_client_secret, DASHBOARD_CLIENT_SECRET_ENV, why.format("client secret")),
            _required_secret(self._cookie_secret, DASHBOARD_COOKIE_SECRET_ENV, why.format("cookie secret")),
        )


# --- [api]: the read-only HTTP API (`lagwatch api`) -------------------------------------
class ApiConfig(_Model):
    """The HTTP API beside the dashboard: Prometheus /metrics, Burrow's v3 API, health."""

    #: Loopback by default; any other address needs auth = "token" (or allow_anonymous = true).
    host: str = "127.0.0.1"
    #: Burrow's and kafka-lag-exporter's customary port, so scrape configs keep working.
    port: int = Field(8000, ge=1, le=65535)
    #: The newest lake rows are read at most once per this many seconds and shared by every request.
    cache_s: float = Field(5, gt=0)
    #: Rows of lag_1m and group_status older than this are not "current" (a vanished group drops out).
    lookback_s: float = Field(600, gt=0)
    #: /metrics exports at most this many series; the finest labels (partition) are dropped first.
    max_series: int = Field(100_000, ge=10)
    #: /readyz fails when the newest lake data or a component's report is older than this.
    ready_max_age_s: float = Field(180, gt=0)
    #: none: open to whoever reaches the port; token: every path but /healthz and /readyz needs
    #: "Authorization: Bearer <token>", the token from LAGWATCH_API_TOKEN.
    auth: Literal["none", "token"] = "none"
    #: Serve a non-loopback host with auth = "none" anyway (e.g. behind a proxy that authenticates).
    allow_anonymous: bool = False

    _token: str = PrivateAttr("")

    @model_validator(mode="before")
    @classmethod
    def _no_secrets_in_file(cls, data: Any) -> Any:
        return _refuse_secret_keys(data, {"token": API_TOKEN_ENV})

    @model_validator(mode="after")
    def _auth_settings(self) -> ApiConfig:
        _refuse_open_door("api", self.host, self.auth, self.allow_anonymous)
        return self

    def token(self) -> str:
        """The bearer token from the environment; a ConfigError naming the variable if unset."""
        return _required_secret(self._token, API_TOKEN_ENV, "api.auth = token needs the token")


class AlertReceiver(_Model):
    name: str = Field(min_length=1)
    #: A registered receiver type: webhook | slack | alertmanager (checked against the registry at load).
    type: str = Field("webhook", min_length=1)
    url: str = Field(min_length=1)
    #: Environment variable holding the HMAC secret for the signature header.
    secret_env: str | None = None
    timeout_s: float = Field(5, gt=0)
    #: Extra HTTP headers sent with every delivery (e.g. an Authorization scheme the receiver wants).
    headers: dict[str, str] = Field(default_factory=dict)
    #: type = "alertmanager": re-push firing alerts this often (Alertmanager resolves alerts not re-pushed).
    resend_s: float = Field(60, gt=0)


class AlertRule(_Model):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    name: str = Field(min_length=1)
    #: threshold | status | absence | rate
    kind: Literal["threshold", "status", "absence", "rate"] = "threshold"
    metric: str = Field(min_length=1)
    by: list[str] = Field(default_factory=list)
    op: Literal[">", ">=", "<", "<=", "==", "!="] = ">"
    threshold: float = 0
    for_: Duration = Field("0s", alias="for")
    severity: str = "warning"
    receivers: list[str] = Field(default_factory=list)
    labels: dict[str, str] = Field(default_factory=dict)
    summary: str = ""
    description: str = ""
    #: Lake table to read; empty: chosen from `metric` (lag_1m / group_status / pipeline_progress
    #: column, "dead_letters", else a metric name in metrics_1m).
    table: str = ""
    #: metrics_* tables: which column of the window is compared (last | avg | min | max | rate_per_s | samples).
    field: str = "last"
    #: metrics_* tables: only samples of this source (admin | jmx | prom | …); empty: every source.
    #: `up` of source admin is the admin collector's: whether the cluster itself could be read.
    source: str = ""
    #: How series not named in `by` are combined into one value per `by` label set.
    reduce: Literal["max", "min", "sum", "avg"] = "max"
    #: kind = "status": fire when the status is at or above this level (OK<WARN<REWIND<STALL<STOP<ERR<LOSS).
    level: str = "STALL"
    #: kind = "rate": change per second over this window; dead_letters: rows received in this window.
    window: Duration = "5m"
    #: How far back a series counts as current (empty: per-table default); absence: how long a
    #: silent series is remembered.
    lookback: OptionalDuration = ""


class InhibitRule(_Model):
    """Alertmanager-style inhibition: an active source alert mutes matching targets with equal labels."""

    source_match: dict[str, str] = Field(default_factory=dict)
    target_match: dict[str, str] = Field(default_factory=dict)
    equal: list[str] = Field(default_factory=lambda: ["cluster"])


class AlertsConfig(_Model):
    evaluate_every_s: float = Field(15, gt=0)
    #: Notification groups: one per value of these labels. group_id (a label of lag alerts only)
    #: gives each consumer group its own group_wait / group_interval; alerts without it (brokers,
    #: pipeline) group by alertname and cluster alone, as Alertmanager does with a missing label.
    group_by: list[str] = Field(default_factory=lambda: ["alertname", "cluster", "group_id"])
    group_wait: Duration = "30s"
    group_interval: Duration = "5m"
    repeat_interval: Duration = "4h"
    state_dir: str = "state/alerts"
    use_default_rules: bool = True
    receivers: list[AlertReceiver] = Field(default_factory=list)
    rules: list[AlertRule] = Field(default_factory=list)
    #: Default inhibition: a down broker (category broker_down) or a cluster that cannot be read at
    #: all (category cluster_down) mutes the lag alerts of its cluster.
    inhibit_rules: list[InhibitRule] = Field(
        default_factory=lambda: [
            InhibitRule(source_match={"category": "broker_down"}, target_match={"category": "lag"}),
            InhibitRule(source_match={"category": "cluster_down"}, target_match={"category": "lag"}),
        ]
    )
    #: Metric names rules may use beyond the canonical ones (custom exporter metrics).
    extra_metrics: list[str] = Field(default_factory=list)
    #: Leadership among engines of one cluster: kafka (consumer group; if Kafka cannot be reached
    #: at start the engine sends alone, logged), kafka_strict (never send without leadership), none.
    leadership: Literal["kafka", "kafka_strict", "none"] = "kafka"
    #: Single-partition topic whose partition 0 holder is the sending engine; empty: lagwatch.alerts.leader.<cluster>.
    leader_topic: str = ""
    leader_session_timeout_ms: int = Field(10_000, ge=1000)
    #: Outbox retry backoff: first delay, cap, and age after which a notification is given up (failed).
    retry_initial_s: float = Field(1, gt=0)
    retry_max_s: float = Field(300, gt=0)
    give_up_after_s: float = Field(86_400, gt=0)
    #: Default rules' thresholds.
    default_time_lag_threshold_s: float = Field(300, gt=0)
    default_freshness_threshold_s: float = Field(60, gt=0)
    #: RetentionMarginLow fires when retention will reach a group's committed offset sooner than this.
    default_retention_margin_threshold_s: float = Field(3600, gt=0)


class DemoConfig(_Model):
    #: Records per second across the demo topics.
    rate: float = Field(50, gt=0)
    #: Port of the demo's simulated broker-JMX exporter (Prometheus text, broker "sim-1").
    jmx_sim_port: int = Field(7071, ge=1, le=65535)


class Config(_Model):
    #: The one-cluster form. With `[[clusters]]` it is not written; it then names the first entry.
    cluster: ClusterConfig = Field(default_factory=ClusterConfig)
    #: Every monitored cluster: the `[[clusters]]` entries, or `[cluster]` alone.
    clusters: list[ClusterConfig] = Field(default_factory=list)
    transport: TransportConfig = Field(default_factory=TransportConfig)
    collect: CollectConfig = Field(default_factory=CollectConfig)
    jmx: JmxConfig = Field(default_factory=JmxConfig)
    lake: LakeConfig = Field(default_factory=LakeConfig)
    spark: SparkConfig = Field(default_factory=SparkConfig)
    lag: LagConfig = Field(default_factory=LagConfig)
    dashboard: DashboardConfig = Field(default_factory=DashboardConfig)
    alerts: AlertsConfig = Field(default_factory=AlertsConfig)
    demo: DemoConfig = Field(default_factory=DemoConfig)
    api: ApiConfig = Field(default_factory=ApiConfig)

    #: Where the file was read from; relative paths in the config resolve against its folder.
    source_path: str = Field("", exclude=True)
    _clusters_resolved: bool = PrivateAttr(False)

    @model_validator(mode="after")
    def _one_list_of_clusters(self) -> Config:
        """Both forms end as `clusters`, each entry complete, so no reader asks which form was used."""
        if self._clusters_resolved:  # an assignment re-runs model validators
            return self
        self._clusters_resolved = True
        if not self.clusters:
            self.__dict__["clusters"] = [self.cluster]  # not an assignment: that would re-run this validator
            self.cluster.jmx.targets.extend(self.jmx.targets)
        else:
            _check_many_clusters(self)
            self.__dict__["cluster"] = self.clusters[0]
        for cluster in self.clusters:
            cluster.__dict__["groups_allow"] = (
                self.collect.groups_allow if cluster.groups_allow is None else cluster.groups_allow
            )
            cluster.__dict__["groups_deny"] = (
                self.collect.groups_deny if cluster.groups_deny is None else cluster.groups_deny
            )
        return self

    @property
    def embedded_broker(self) -> bool:
        return not self.cluster.bootstrap_servers

    def cluster_named(self, name: str) -> ClusterConfig:
        """The monitored cluster called `name`; a KeyError names the ones there are."""
        for cluster in self.clusters:
            if cluster.name == name:
                return cluster
        raise KeyError(f"no cluster {name!r} in the config (clusters: {', '.join(c.name for c in self.clusters)})")

    def transport_servers(self) -> str:
        return self.transport.bootstrap_servers or self.cluster.bootstrap_servers

    def resolve_path(self, path: str) -> Path:
        """Resolve a configured path against the config file's folder, so cwd never matters."""
        candidate = Path(path)
        if candidate.is_absolute() or not self.source_path:
            return candidate
        return Path(self.source_path).resolve().parent / candidate


def _check_many_clusters(config: Config) -> None:
    """`[[clusters]]` rules: names unique, servers set, and no one-cluster keys beside it."""
    if "cluster" in config.model_fields_set:
        raise ValueError("[cluster] and [[clusters]] both set: use [cluster] for one cluster or [[clusters]] for many")
    if config.jmx.targets:
        raise ValueError("jmx.targets: with [[clusters]], list each cluster's targets under [[clusters.jmx.targets]]")
    seen: set[str] = set()
    for cluster in config.clusters:
        if cluster.name in seen:
            raise ValueError(f"clusters: the name {cluster.name!r} is used twice; each cluster needs its own name")
        seen.add(cluster.name)
        if not cluster.bootstrap_servers:
            raise ValueError(f"clusters {cluster.name!r}: bootstrap_servers is required with [[clusters]]")


def _key_name(loc: tuple[int | str, ...], data: dict[str, Any]) -> str:
    """Dotted key; a list item is named by its `name` the way rule errors are (alerts.rules 'LagHigh': for)."""
    key = ""
    node: Any = data
    for part in loc:
        node = node[part] if isinstance(node, dict | list) and _has(node, part) else None
        if isinstance(part, int) and isinstance(node, dict) and isinstance(node.get("name"), str):
            key += f" {node['name']!r}:"
        elif isinstance(part, int):
            key += f"[{part}]"
        else:
            key += (" " if key.endswith(":") else "." if key else "") + part
    return key.rstrip(":") or "(top level)"


def _has(node: dict[str, Any] | list[Any], part: int | str) -> bool:
    if isinstance(node, dict):
        return part in node
    return isinstance(part, int) and 0 <= part < len(node)


def _format_validation_error(exc: ValidationError, path: str, data: dict[str, Any]) -> str:
    lines = [f"invalid configuration in {path}:"]
    for err in exc.errors():
        key = _key_name(err["loc"], data)
        if not err["loc"]:  # a whole-config rule: its message names the keys
            lines.append(f"  {err['msg'].removeprefix('Value error, ')}")
        elif err["type"] == "extra_forbidden":
            lines.append(f"  {key}: unknown key")
        else:
            lines.append(f"  {key}: {err['msg'].removeprefix('Value error, ')}")
    return "\n".join(lines)


def cluster_env_prefix(name: str) -> str:
    """LAGWATCH_CLUSTER_<NAME>_ for a named cluster: upper case, anything but A-Z and 0-9 as `_`."""
    return "LAGWATCH_CLUSTER_" + re.sub(r"[^A-Z0-9]", "_", name.upper()) + "_"


def named_cluster_env_var(name: str, key: str) -> str:
    """The variable that sets `key` for the cluster called `name`: LAGWATCH_CLUSTER_PROD_EU_SASL_PASSWORD."""
    return cluster_env_prefix(name) + _env_suffix(key)


def _apply_env_secrets(config: Config, environ: dict[str, str]) -> None:
    """Secrets and deployment-specific overrides come from LAGWATCH_* environment variables.

    LAGWATCH_CLUSTER_SASL_PASSWORD (and its siblings) is the one-cluster form's; every cluster also
    reads its own LAGWATCH_CLUSTER_<NAME>_SASL_PASSWORD, which wins.
    """
    for key in ENV_CLIENT_KEYS:
        if environ.get(client_env_var("cluster", key)) and len(config.clusters) == 1:
            config.cluster.client[key] = environ[client_env_var("cluster", key)]
        for cluster in config.clusters:
            if environ.get(named_cluster_env_var(cluster.name, key)):
                cluster.client[key] = environ[named_cluster_env_var(cluster.name, key)]
        if environ.get(client_env_var("transport", key)):
            config.transport.client[key] = environ[client_env_var("transport", key)]
    if environ.get("LAGWATCH_BOOTSTRAP_SERVERS") and len(config.clusters) == 1:
        config.cluster.bootstrap_servers = environ["LAGWATCH_BOOTSTRAP_SERVERS"]
    # Read here, demanded only by the server that needs them (dashboard.oidc_secrets, api.token),
    # so `lagwatch sql` on an analyst's machine runs without the dashboard's secrets.
    config.dashboard._oidc_client_secret = environ.get(DASHBOARD_CLIENT_SECRET_ENV, "")
    config.dashboard._cookie_secret = environ.get(DASHBOARD_COOKIE_SECRET_ENV, "")
    config.api._token = environ.get(API_TOKEN_ENV, "")


def parse_config(data: dict[str, Any], path: str = "<memory>", environ: dict[str, str] | None = None) -> Config:
    """Validate a config mapping; raise ConfigError naming the file and every bad key."""
    try:
        config = Config.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_format_validation_error(exc, path, data)) from None
    config.source_path = path if path != "<memory>" else ""
    _apply_env_secrets(config, dict(os.environ) if environ is None else environ)
    return config


def load_config(path: str | os.PathLike[str] | None = None) -> Config:
    """Load `path`, else $LAGWATCH_CONFIG, else ./config.toml (defaults, said out loud, if that is absent)."""
    explicit = path is not None or CONFIG_ENV_VAR in os.environ
    chosen = str(path) if path is not None else os.environ.get(CONFIG_ENV_VAR, DEFAULT_CONFIG_PATH)
    file = Path(chosen)
    if not file.exists():
        if explicit:
            raise ConfigError(f"config file not found: {chosen}")
        return _defaults(file)
    try:
        data = tomllib.loads(file.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"invalid TOML in {chosen}: {exc}") from None
    return parse_config(data, str(file))


def _defaults(looked_for: Path) -> Config:
    """No ./config.toml: the built-in defaults, and a warning saying so and what that means."""
    config = parse_config({})
    cluster = (
        "no bootstrap servers, so Kafka commands start the embedded demo broker (tansu, in memory)"
        if config.embedded_broker
        else f"cluster {config.cluster.bootstrap_servers} (LAGWATCH_BOOTSTRAP_SERVERS)"
    )
    log.warning(
        "no config file at %s (pass --config PATH or set %s): using the built-in defaults: %s; lake in %s",
        looked_for.resolve(),
        CONFIG_ENV_VAR,
        cluster,
        Path(config.lake.path).resolve(),
    )
    return config
