"""Compile `[[alerts.rules]]` into checked, ready-to-query rules, and ship the default rules.

Why compile at start-up: a rule with a typo in its metric, duration or template would
otherwise fail silently at 3 a.m. (no rows match, or the page has no text). Everything a rule
names is checked here, and the ConfigError names the rule and the key. Metric names and the
status order come from :mod:`lagwatch.vocabulary`; lake columns from :mod:`lagwatch.lake`.
"""

from __future__ import annotations

import logging
import string
from dataclasses import dataclass, field
from typing import Any

from alerts.receivers import check_receiver_types
from lagwatch import vocabulary
from lagwatch.config import (
    PREVIOUS_ALERTNAME_LABEL,
    RENAMED_RULES,
    AlertRule,
    AlertsConfig,
    ConfigError,
    parse_duration,
)
from lagwatch.lake import LABEL_COLUMNS, TABLES
from lagwatch.vocabulary import SOURCES as SAMPLE_SOURCES
from lagwatch.vocabulary import STATUS_ORDER
from lagwatch.vocabulary import Source as SampleSource

METRIC_TABLES = ("metrics_1m", "metrics_10s")
METRIC_FIELDS = ("last", "avg", "min", "max", "first", "rate_per_s", "samples")
DEAD_LETTERS = "dead_letters"

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Source:
    """How a lake table is read: its time column, numeric columns, and the columns of one series."""

    table: str
    time_column: str
    numeric: tuple[str, ...]
    series: tuple[str, ...]
    default_lookback_s: float
    has_status: bool = False
    #: A key column within `prune_slack_s` before the time column: filtering on it too lets DuckDB
    #: skip old rows below the views' dedupe when the time column is not part of the key.
    prune_column: str = ""
    prune_slack_s: float = 0.0


#: Integer columns that identify rows rather than measure anything.
_NOT_MEASURES = frozenset({"version", "partition", "source_partition", "source_offset", "batch_id"})


def numeric_columns(table_name: str) -> tuple[str, ...]:
    """Measures of a lake table, read from the lake contract so new columns are usable at once."""
    return tuple(
        name
        for name, sql_type in TABLES[table_name].columns
        if sql_type in ("DOUBLE", "BIGINT", "INTEGER") and name not in _NOT_MEASURES
    )


SOURCES: dict[str, Source] = {
    "metrics_1m": Source("metrics_1m", "window_start", (), ("cluster", "source", *LABEL_COLUMNS), 180),
    "metrics_10s": Source("metrics_10s", "window_start", (), ("cluster", "source", *LABEL_COLUMNS), 60),
    "lag_1m": Source(
        "lag_1m", "window_start", numeric_columns("lag_1m"), ("cluster", "group_id", "topic", "partition"), 180, True
    ),
    "group_status": Source(
        "group_status",
        "updated_at",
        numeric_columns("group_status"),
        ("cluster", "group_id"),
        600,
        True,
        prune_column="window_start",
        prune_slack_s=60,
    ),
    "pipeline_progress": Source(
        "pipeline_progress", "ts", numeric_columns("pipeline_progress"), ("cluster", "query"), 300
    ),
    DEAD_LETTERS: Source(DEAD_LETTERS, "received_at", (), ("cluster", "source_topic", "source_partition"), 300),
}

_FIXED_TEMPLATE_FIELDS = ("alertname", "cluster", "severity", "category", "value", "threshold", "status", "reason")


@dataclass(frozen=True)
class CompiledRule:
    """A rule ready to evaluate: resolved table, value column and durations in seconds."""

    name: str
    kind: str
    source: Source
    #: Metric name for metrics_* tables; None where `value_column` is a column of the table.
    metric: str | None
    #: metrics_* tables: only rows of this sample source ("" every source).
    sample_source: str
    value_column: str
    by: tuple[str, ...]
    op: str
    threshold: float
    for_s: float
    reduce: str
    level: str
    window_s: float
    lookback_s: float
    severity: str
    receivers: tuple[str, ...]
    labels: dict[str, str] = field(hash=False)
    summary: str = ""
    description: str = ""

    def value_text(self, value: float) -> str | None:
        """The value as the operator reads it where it is a word: a status rule's status (4 -> STOP).

        Why: a status rule's value is the status' severity index, which means nothing on a page or
        in the Alerts table; None where the number itself is the value.
        """
        return STATUS_ORDER[int(value)] if self.kind == "status" else None

    def render(self, labels: dict[str, str], value: float, extra: dict[str, Any]) -> dict[str, str]:
        """Annotations for one alert instance (templates were checked at start-up); `{value}` of a
        status rule is its status word."""
        text = self.value_text(value)
        shown: float | str = value if text is None else text
        values = _TemplateValues({**labels, **extra, "value": shown, "threshold": self.threshold})
        out = {}
        for key, template in (("summary", self.summary), ("description", self.description)):
            if template:
                out[key] = template.format_map(values)
        return out


class _TemplateValues(dict):  # type: ignore[type-arg]
    """A label absent from one instance renders empty rather than failing a notification."""

    def __missing__(self, key: str) -> str:
        return ""


def _choose_source(rule: AlertRule) -> Source:
    if rule.table:
        if rule.table not in SOURCES:
            raise ConfigError(f"alerts.rules '{rule.name}': table: unknown table {rule.table!r} ({', '.join(SOURCES)})")
        return SOURCES[rule.table]
    if rule.metric == DEAD_LETTERS:
        return SOURCES[DEAD_LETTERS]
    if rule.metric == "status":
        by_partition = any(c in rule.by for c in ("topic", "partition"))
        return SOURCES["lag_1m" if by_partition else "group_status"]
    for name in ("lag_1m", "group_status", "pipeline_progress"):
        if rule.metric in SOURCES[name].numeric:
            return SOURCES[name]
    return SOURCES["metrics_10s" if rule.kind == "absence" else "metrics_1m"]


def _value_column(rule: AlertRule, source: Source, known_metrics: frozenset[str]) -> tuple[str | None, str]:
    """(metric filter, value column) for the rule, or ConfigError naming the bad key."""
    where = f"alerts.rules '{rule.name}'"
    if source.table in METRIC_TABLES:
        if rule.metric not in known_metrics:
            raise ConfigError(
                f"{where}: metric: unknown metric {rule.metric!r} (no collector emits it: not in "
                "docs/metrics.md, not a column of lag_1m/group_status/pipeline_progress; declare custom "
                "exporter metrics in [alerts] extra_metrics)"
            )
        if rule.field not in METRIC_FIELDS:
            raise ConfigError(f"{where}: field: unknown field {rule.field!r} ({', '.join(METRIC_FIELDS)})")
        if rule.source and rule.source not in SAMPLE_SOURCES:
            raise ConfigError(f"{where}: source: unknown sample source {rule.source!r} ({', '.join(SAMPLE_SOURCES)})")
        registered = vocabulary.METRIC_BY_NAME.get(rule.metric)
        if rule.field == "rate_per_s" and registered is not None and registered.kind != "counter":
            raise ConfigError(
                f"{where}: field: rate_per_s is only computed for counters; {rule.metric!r} is a {registered.kind}"
            )
        return rule.metric, rule.field
    if source.table == DEAD_LETTERS:
        if rule.metric != DEAD_LETTERS:
            raise ConfigError(f'{where}: metric: table dead_letters only offers metric "dead_letters"')
        return None, "count"
    if rule.source:
        raise ConfigError(f"{where}: source: only rules over metrics_1m / metrics_10s filter by sample source")
    if rule.metric == "status" and source.has_status:
        return None, "status"
    if rule.metric not in source.numeric:
        raise ConfigError(
            f"{where}: metric: {rule.metric!r} is not a numeric column of {source.table} ({', '.join(source.numeric)})"
        )
    return None, rule.metric


def _check_kind(rule: AlertRule, source: Source, value_column: str) -> None:
    where = f"alerts.rules '{rule.name}'"
    if rule.kind == "status":
        if value_column != "status":
            raise ConfigError(f'{where}: kind "status" needs metric = "status" (lag_1m or group_status)')
        if rule.level not in STATUS_ORDER:
            raise ConfigError(f"{where}: level: unknown status {rule.level!r} ({' < '.join(STATUS_ORDER)})")
    elif value_column == "status":
        raise ConfigError(f'{where}: metric "status" is text: use kind = "status" with level = "…"')
    if rule.kind == "rate" and source.table == DEAD_LETTERS:
        return
    allowed_by = set(source.series) - {"source"}
    for label in rule.by:
        if label not in allowed_by:
            labels = ", ".join(sorted(allowed_by))
            raise ConfigError(f"{where}: by: {label!r} is not a label of {source.table} ({labels})")


def _check_template(rule: AlertRule, key: str, template: str) -> None:
    """Every {field} must be a label the instance carries; the format spec must work on a sample."""
    allowed = {*_FIXED_TEMPLATE_FIELDS, *rule.by, *rule.labels}
    where = f"alerts.rules '{rule.name}': {key}"
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as exc:
        raise ConfigError(f"{where}: bad template {template!r}: {exc}") from None
    sample: dict[str, Any] = {name: "x" for name in allowed}
    sample.update(value="STOP" if rule.kind == "status" else 1.0, threshold=1.0)
    for _, field_name, _, _ in parsed:
        if field_name is None:
            continue
        if field_name not in allowed:
            raise ConfigError(
                f"{where}: template field {{{field_name}}} is unknown (available: {', '.join(sorted(allowed))})"
            )
    try:
        template.format_map(sample)
    except (ValueError, TypeError, KeyError, IndexError) as exc:
        hint = " ({value} of a status rule is the status word, e.g. STOP: drop the number format)"
        raise ConfigError(f"{where}: bad template {template!r}: {exc}{hint if rule.kind == 'status' else ''}") from None


def category_of(rule: AlertRule, source: Source) -> str:
    """The `category` label inhibition matches on, unless the rule sets its own."""
    if source.table in ("lag_1m", "group_status"):
        return "lag"
    if source.table in ("pipeline_progress", DEAD_LETTERS):
        return "pipeline"
    if rule.metric == "up" and "broker" in rule.by:
        return "broker_down"
    if rule.metric == "up" and rule.source == SampleSource.ADMIN:
        return "cluster_down"  # the admin collector could not read the cluster at all
    return "kafka"


def compile_rule(rule: AlertRule, known_metrics: frozenset[str], receiver_names: set[str]) -> CompiledRule:
    where = f"alerts.rules '{rule.name}'"
    source = _choose_source(rule)
    metric, value_column = _value_column(rule, source, known_metrics)
    _check_kind(rule, source, value_column)
    for key in ("summary", "description"):
        _check_template(rule, key, getattr(rule, key))
    unknown = [r for r in rule.receivers if r not in receiver_names]
    if unknown:
        raise ConfigError(f"{where}: receivers: unknown receiver(s) {unknown} (configured: {sorted(receiver_names)})")
    for_s = parse_duration(rule.for_, f"{where}: for")
    window_s = parse_duration(rule.window, f"{where}: window")
    if rule.lookback:
        lookback_s = parse_duration(rule.lookback, f"{where}: lookback")
    elif rule.kind == "absence":
        lookback_s = max(3600.0, 10 * for_s)
    else:
        lookback_s = source.default_lookback_s
    if source.table == DEAD_LETTERS:
        lookback_s = window_s  # the value is the count of rows received within the window
    elif rule.kind == "rate":
        lookback_s = max(lookback_s, window_s)
    return CompiledRule(
        name=rule.name,
        kind=rule.kind,
        source=source,
        metric=metric,
        sample_source=rule.source,
        value_column=value_column,
        by=tuple(rule.by),
        op=rule.op,
        threshold=rule.threshold,
        for_s=for_s,
        reduce=rule.reduce,
        level=rule.level,
        window_s=window_s,
        lookback_s=lookback_s,
        severity=rule.severity,
        receivers=tuple(rule.receivers),
        labels={"category": category_of(rule, source), **_previous_name_label(rule.name), **rule.labels},
        summary=rule.summary,
        description=rule.description,
    )


#: Default rules that are off until `[alerts] enable_rules` names them: useful to some operators,
#: noise to others (a group that rebalances by design), so they ship switched off.
OFF_BY_DEFAULT_RULES: frozenset[str] = frozenset({"RebalanceStorm"})


def default_rules(alerts: AlertsConfig) -> list[AlertRule]:
    """The rules every Kafka operator wants on day one (documented in docs/alerts.md), and those
    OFF_BY_DEFAULT_RULES names, which :func:`effective_rules` adds only when enabled."""
    rows: list[dict[str, Any]] = [
        dict(
            name="UnderReplicatedPartitions",
            metric="under_replicated_partitions",
            by=["broker"],
            op=">",
            threshold=0,
            **{"for": "1m"},
            summary="Broker {broker} has {value:.0f} under-replicated partitions",
        ),
        dict(
            name="OfflinePartitions",
            metric="offline_partitions",
            reduce="sum",
            op=">",
            threshold=0,
            severity="critical",
            summary="{value:.0f} partitions are offline in cluster {cluster}",
        ),
        dict(
            name="ActiveControllerCount",
            metric="active_controller_count",
            reduce="sum",
            op="!=",
            threshold=1,
            severity="critical",
            **{"for": "1m"},
            summary="Cluster {cluster} has {value:.0f} active controllers (expected 1)",
        ),
        dict(
            name="BrokerDown",
            metric="up",
            by=["broker"],
            op="==",
            threshold=0,
            severity="critical",
            **{"for": "1m"},
            summary="Broker {broker} does not answer its scrape",
        ),
        dict(
            # One page per cluster that cannot be read (its groups all turn ERR), instead of one
            # ConsumerGroupUnhealthy per group: the default inhibition mutes those from the first failed
            # cycle (a pending source inhibits), and the page waits a minute so one blip is no page.
            name="ClusterUnreachable",
            metric="up",
            source=SampleSource.ADMIN.value,
            op="==",
            threshold=0,
            severity="critical",
            **{"for": "1m"},
            summary="Cluster {cluster} cannot be read (the admin collector's newest cycle failed): its groups are ERR",
        ),
        dict(
            name="LeaderElectionSpike",
            metric="leader_elections_total",
            field="rate_per_s",
            reduce="sum",
            op=">",
            threshold=0.05,
            summary="Leader elections at {value:.2f}/s in cluster {cluster}",
        ),
        dict(
            # Any status from STALL up (STALL, STOP, ERR, LOSS), so the name says "unhealthy", and the
            # status word is in the summary and the `status` label (named ConsumerGroupStalled before).
            name="ConsumerGroupUnhealthy",
            kind="status",
            metric="status",
            by=["group_id"],
            level="STALL",
            summary="Consumer group {group_id} is {status}: {reason}",
        ),
        dict(
            name="ConsumerTimeLagHigh",
            metric="max_time_lag_s",
            by=["group_id"],
            op=">",
            threshold=alerts.default_time_lag_threshold_s,
            **{"for": "2m"},
            summary="Consumer group {group_id} is {value:.0f} s behind",
        ),
        dict(
            name="RetentionMarginLow",
            metric="retention_margin_s",
            by=["group_id", "topic", "partition"],
            op="<",
            threshold=alerts.default_retention_margin_threshold_s,
            severity="critical",
            **{"for": "2m"},
            summary="Retention reaches {group_id}'s committed offset on {topic}/{partition} in {value:.0f} s "
            "({reason})",
        ),
        dict(
            # storm_rebalances is the count the group's reason names ("rebalance storm: 7 rebalances
            # in 10m"; lag.rebalance_storm_count / lag.rebalance_storm_window_s), else 0.
            name="RebalanceStorm",
            metric="storm_rebalances",
            by=["group_id"],
            op=">",
            threshold=0,
            summary="Consumer group {group_id} is in a rebalance storm: {value:.0f} rebalances ({reason})",
        ),
        dict(
            name="DeadLettersGrowing",
            metric=DEAD_LETTERS,
            op=">",
            threshold=0,
            window="5m",
            summary="{value:.0f} malformed records went to dead_letters in the last 5 minutes",
        ),
        dict(
            name="PipelineStale",
            metric="freshness_s",
            op=">",
            threshold=alerts.default_freshness_threshold_s,
            summary="Lake data is {value:.0f} s behind (query {query})",
            by=["query"],
        ),
        dict(
            name="PipelineProgressMissing",
            kind="absence",
            metric="freshness_s",
            table="pipeline_progress",
            by=["query"],
            **{"for": "5m"},
            summary="Spark query {query} reported no progress for {value:.0f} s",
        ),
    ]
    return [AlertRule.model_validate(row) for row in rows]


def _previous_name_label(name: str) -> dict[str, str]:
    """`previous_alertname` for a renamed rule's alerts, so routes on the old name can be moved."""
    old = [before for before, after in RENAMED_RULES.items() if after == name]
    return {PREVIOUS_ALERTNAME_LABEL: old[0]} if old else {}


_warned: set[str] = set()


def _deprecated(message: str) -> None:
    """Log a deprecation once per process (every command compiles the rules, some more than once)."""
    if message not in _warned:
        _warned.add(message)
        log.warning(message)


def current_rule_name(name: str, where: str) -> str:
    """`name`, or the new name of a renamed default rule (with a deprecation warning naming it)."""
    if name not in RENAMED_RULES:
        return name
    _deprecated(f"{where}: rule {name} is now named {RENAMED_RULES[name]}; the old name still works for one "
                f"release: use {RENAMED_RULES[name]}")  # fmt: skip
    return RENAMED_RULES[name]


def check_enabled_rules(alerts: AlertsConfig) -> None:
    """`enable_rules` may only name off-by-default rules: any other name is a typo that would
    otherwise leave the rule the operator asked for silently off."""
    unknown = [name for name in alerts.enable_rules if name not in OFF_BY_DEFAULT_RULES]
    if unknown:
        raise ConfigError(
            f"alerts.enable_rules: unknown rule(s) {', '.join(repr(n) for n in unknown)}: only default rules that "
            f"are off by default can be named ({', '.join(sorted(OFF_BY_DEFAULT_RULES))}); the other default rules "
            "are on already while use_default_rules = true"
        )


def effective_rules(alerts: AlertsConfig) -> list[AlertRule]:
    """The configured rules, then the default rules no configured rule replaces by name.

    A configured rule with a renamed default's old name replaces it (under the name it has). An
    off-by-default rule is among the defaults only when `enable_rules` names it.
    """
    check_enabled_rules(alerts)
    configured = list(alerts.rules)
    names = {r.name for r in configured}
    names |= {RENAMED_RULES[n] for n in names if n in RENAMED_RULES}
    if alerts.use_default_rules:
        off = OFF_BY_DEFAULT_RULES - set(alerts.enable_rules)
        configured += [r for r in default_rules(alerts) if r.name not in names and r.name not in off]
    return configured


def _warn_old_names(alerts: AlertsConfig) -> None:
    """Config that still names a renamed rule works for one release; say what to write instead."""
    for rule in alerts.rules:
        new = RENAMED_RULES.get(rule.name)
        if new and alerts.use_default_rules and new not in {r.name for r in alerts.rules}:
            _deprecated(f"alerts.rules '{rule.name}': the default rule {rule.name} is now named {new}; this rule "
                        f"still replaces it for one release: rename it to {new}")  # fmt: skip
    for n, inhibit in enumerate(alerts.inhibit_rules):
        for key in ("source_match", "target_match"):
            name = getattr(inhibit, key).get("alertname", "")
            if name in RENAMED_RULES:
                _deprecated(f"alerts.inhibit_rules[{n}].{key}: alertname {name} is now {RENAMED_RULES[name]}; "
                            f"it matches both for one release: write {RENAMED_RULES[name]}")  # fmt: skip


def compile_rules(alerts: AlertsConfig) -> list[CompiledRule]:
    """Every configured (and default) rule, compiled; the first problem raises ConfigError."""
    receiver_names = [r.name for r in alerts.receivers]
    duplicates = sorted({n for n in receiver_names if receiver_names.count(n) > 1})
    if duplicates:
        raise ConfigError(f"alerts.receivers: duplicate receiver name(s) {duplicates}")
    check_receiver_types(alerts.receivers)
    _warn_old_names(alerts)
    configured = effective_rules(alerts)
    seen: set[str] = set()
    for rule in configured:
        if rule.name in seen:
            raise ConfigError(f"alerts.rules: duplicate rule name {rule.name!r}")
        seen.add(rule.name)
    known = vocabulary.METRIC_NAMES | frozenset(alerts.extra_metrics)
    return [compile_rule(rule, known, set(receiver_names)) for rule in configured]
