"""`[alerts]`: the alert engine: whether the shell runs it, its rules, receivers, grouping and leadership."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field

from lagwatch.config.base import Duration, OptionalDuration, StrictModel


class AlertReceiver(StrictModel):
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


class AlertRule(StrictModel):
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


class InhibitRule(StrictModel):
    """Alertmanager-style inhibition: an active source alert mutes matching targets with equal labels."""

    source_match: dict[str, str] = Field(default_factory=dict)
    target_match: dict[str, str] = Field(default_factory=dict)
    equal: list[str] = Field(default_factory=lambda: ["cluster"])


class AlertsConfig(StrictModel):
    #: Start the engine beside the dashboard and the API (`lagwatch dashboard`, `lagwatch up`), so
    #: alerts go out whether or not anyone has the page open. `lagwatch alerts` runs it either way.
    run: bool = True
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
