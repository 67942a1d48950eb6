"""`[alerts]`: the alert engine: whether the shell runs it, its rules, receivers, grouping and leadership."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Literal

from pydantic import ConfigDict, Field, field_validator, model_validator

from lagwatch.config.base import ConfigError, Duration, OptionalDuration, StrictModel

#: Default rules that were renamed: old name -> new name. For one release the old name still
#: works, with a warning naming the new one: a `[[alerts.rules]]` entry with the old name replaces
#: the renamed default, silences and `[[alerts.inhibit_rules]]` matching `alertname` on it match
#: the new name too, `lagwatch alerts backtest --rule` accepts it, and the renamed rule's alerts
#: carry the old name as the label `previous_alertname` so Alertmanager routes can be moved.
RENAMED_RULES: dict[str, str] = {"ConsumerGroupStalled": "ConsumerGroupUnhealthy"}
#: The label that carries a renamed rule's old name on its alerts.
PREVIOUS_ALERTNAME_LABEL = "previous_alertname"

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class AlertReceiver(StrictModel):
    #: The name rules give in `receivers`.
    name: str = Field(min_length=1)
    #: A registered receiver type: webhook | slack | alertmanager (checked against the registry at load).
    type: str = Field("webhook", min_length=1)
    #: Where deliveries go (alertmanager: its base URL, POSTed to <url>/api/v2/alerts). Leave it
    #: out and set `url_env` when the URL is a secret (a Slack or PagerDuty webhook URL).
    url: str = ""
    #: Name of the environment variable holding the URL instead of `url` (e.g.
    #: LAGWATCH_SLACK_WEBHOOK_URL), read by the alert engine when it starts.
    url_env: str | None = None
    #: Environment variable holding the HMAC secret for the signature header.
    secret_env: str | None = None
    #: Seconds one delivery request may take.
    timeout_s: float = Field(5, gt=0)
    #: Extra HTTP headers sent with every delivery (e.g. an Authorization scheme the receiver wants).
    headers: dict[str, str] = Field(default_factory=dict)
    #: type = "alertmanager": re-push firing alerts this often (Alertmanager resolves alerts not re-pushed).
    resend_s: float = Field(60, gt=0)

    @field_validator("url_env")
    @classmethod
    def _variable_name(cls, value: str | None) -> str | None:
        # The value is never echoed: a webhook URL pasted here by mistake must not reach a log.
        if value is not None and not _ENV_NAME.fullmatch(value):
            raise ValueError(
                "must be the name of an environment variable (letters, digits, _), e.g. LAGWATCH_SLACK_WEBHOOK_URL; "
                "the URL itself goes into that variable"
            )
        return value

    @model_validator(mode="after")
    def _one_url(self) -> AlertReceiver:
        if bool(self.url) == bool(self.url_env):
            raise ValueError(
                'set url = "http://…" or url_env = "VARIABLE" (the environment variable holding the URL), not both'
                if self.url
                else 'url: set url = "http://…", or url_env = "VARIABLE" naming the environment variable holding it'
            )
        return self

    def target_url(self, environ: Mapping[str, str]) -> str:
        """The URL deliveries go to: `url`, or the value of the `url_env` variable.

        Demanded only by the engine that sends (checked when it starts), so `lagwatch sql` or a
        backtest runs without the receivers' secrets.
        """
        if self.url:
            return self.url
        value = environ.get(self.url_env or "", "")
        if not value:
            raise ConfigError(
                f"alerts.receivers '{self.name}': url_env: set the environment variable {self.url_env} to the "
                "receiver's URL (or give url in the config file)"
            )
        return value


class AlertRule(StrictModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    #: The alert's name (its alertname label); a rule named like a default rule replaces it.
    name: str = Field(min_length=1)
    #: threshold | status | absence | rate
    kind: Literal["threshold", "status", "absence", "rate"] = "threshold"
    #: A collector metric, a numeric column of lag_1m / group_status / pipeline_progress, status, or dead_letters.
    metric: str = Field(min_length=1)
    #: One alert per value of these labels; rows without them are not part of the rule.
    by: list[str] = Field(default_factory=list)
    #: How the value is compared with `threshold`.
    op: Literal[">", ">=", "<", "<=", "==", "!="] = ">"
    #: The value the series is compared with.
    threshold: float = 0
    #: How long the condition must hold before the alert fires.
    for_: Duration = Field("0s", alias="for")
    #: The alert's severity label.
    severity: str = "warning"
    #: Receivers (by name) this rule's alerts go to; empty: every configured receiver.
    receivers: list[str] = Field(default_factory=list)
    #: Extra labels every alert of this rule carries.
    labels: dict[str, str] = Field(default_factory=dict)
    #: Alert text, a Python str.format template (fields in docs/alerts.md, "Templates").
    summary: str = ""
    #: Longer alert text, a template like `summary`.
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


class InhibitRule(StrictModel):
    """Alertmanager-style inhibition: an active source alert mutes matching targets with equal labels."""

    #: Labels (and values) an active alert must have to mute others.
    source_match: dict[str, str] = Field(default_factory=dict)
    #: Labels (and values) of the alerts it mutes.
    target_match: dict[str, str] = Field(default_factory=dict)
    #: Labels the source and target alerts must share, with equal values.
    equal: list[str] = Field(default_factory=lambda: ["cluster"])


class AlertsConfig(StrictModel):
    #: Start the engine beside the dashboard and the API (`lagwatch dashboard`, `lagwatch up`), so
    #: alerts go out whether or not anyone has the page open. `lagwatch alerts` runs it either way.
    run: bool = True
    #: Seconds between two evaluations of the rules.
    evaluate_every_s: float = Field(15, gt=0)
    #: Notification groups: one per value of these labels. group_id (a label of lag alerts only)
    #: gives each consumer group its own group_wait / group_interval; alerts without it (brokers,
    #: pipeline) group by alertname and cluster alone, as Alertmanager does with a missing label.
    group_by: list[str] = Field(default_factory=lambda: ["alertname", "cluster", "group_id"])
    #: How long a new notification group waits before its first notification.
    group_wait: Duration = "30s"
    #: How often a group is looked at again; it sends when an alert joined or resolved.
    group_interval: Duration = "5m"
    #: A group whose alerts still fire, unchanged, is sent again after this.
    repeat_interval: Duration = "4h"
    #: Folder of the engine's state and the silences; relative: against the config file's folder.
    state_dir: str = "state/alerts"
    #: Evaluate the default rules (docs/alerts.md) besides `[[alerts.rules]]`.
    use_default_rules: bool = True
    #: Default rules that are off by default, switched on here by name (e.g. ["RebalanceStorm"];
    #: docs/alerts.md lists them). Needs use_default_rules.
    enable_rules: list[str] = Field(default_factory=list)
    #: Where notifications go; none: alerts are evaluated and recorded, not sent.
    receivers: list[AlertReceiver] = Field(default_factory=list)
    #: Alert rules of your own (docs/alerts.md, "Rules").
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
    #: Session timeout of the leadership group: how soon another engine takes over from a dead one.
    leader_session_timeout_ms: int = Field(10_000, ge=1000)
    #: Outbox retry backoff: the first delay, doubling (with jitter) up to `retry_max_s`.
    retry_initial_s: float = Field(1, gt=0)
    #: Longest delay between two retries of a notification.
    retry_max_s: float = Field(300, gt=0)
    #: A notification still undelivered at this age is given up (recorded as failed).
    give_up_after_s: float = Field(86_400, gt=0)
    #: ConsumerTimeLagHigh (a default rule) fires when a group is more seconds behind than this.
    default_time_lag_threshold_s: float = Field(300, gt=0)
    #: PipelineStale (a default rule) fires when lake data is more seconds behind than this.
    default_freshness_threshold_s: float = Field(60, gt=0)
    #: RetentionMarginLow fires when retention will reach a group's committed offset sooner than this.
    default_retention_margin_threshold_s: float = Field(3600, gt=0)
