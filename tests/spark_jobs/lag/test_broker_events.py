"""Broker health events: which samples count, the state, the clause, and the reason they join.

The unit tests feed the rows ``route.py`` makes (BROKER copies of bucket 0); the Spark test
runs the job's rollups operator over micro-batches, with the broker events in a batch before
the groups' lag and in other buckets than the groups'.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest

from collectors.jmx.collector import build_jmx_collectors
from harness.jmx_double import JmxDouble
from harness.kafka_workload import KafkaWorkload
from lagwatch import lake as lakelib
from lagwatch.config import Config, LagConfig
from lagwatch.kafka import ensure_topic, transport_client_config
from lagwatch.samples import make_sample
from lagwatch.vocabulary import BROKER_EVENT_METRICS
from spark_jobs import route
from spark_jobs.lag import broker_events, reasons
from spark_jobs.lag.group import GroupFacts, summarize_group
from spark_jobs.lag.reasons import format_clock
from spark_jobs.lag.tracker import PartitionReport
from spark_jobs.rollups import METRIC_INPUTS
from spark_jobs.windows import SERIES_COLUMNS
from tests.spark_jobs.conftest import parsed_sample, run_rollups
from tests.spark_jobs.lake_workload import collect_then_roll_up

T0 = 1_767_261_720_000  # 2026-01-01T10:02:00Z
KEEP_MS = 1_200_000


def sample(ts_ms: int, metric: str, value: float, broker: str | None = "1", **labels: Any) -> dict[str, Any]:
    """A sample's routed columns, as the collector makes it (JMX unless `source` says otherwise)."""
    kind = "counter" if metric.endswith("_total") else "gauge"
    fields = {"cluster": "prod", "source": "jmx", "collector": "c"} | labels
    made = make_sample(ts=ts_ms, metric=metric, kind=kind, value=value, broker=broker, **fields)
    return {name: getattr(made, name) for name in (*SERIES_COLUMNS, "ts", "value")}


def broker_rows(samples: list[dict[str, Any]]) -> pd.DataFrame:
    """The BROKER rows route.py sends to bucket 0 (every bucket gets the same)."""
    rows, buckets = route.operator_rows(pa.Table.from_pylist(samples), cluster=None, lag_routing=True)
    frame = rows.to_pandas()
    return frame.loc[(frame["role"] == route.BROKER) & (buckets == 0), list(METRIC_INPUTS)]


def folded(*batches: list[dict[str, Any]]) -> broker_events.BrokerEvents:
    state = broker_events.BrokerEvents()
    for samples in batches:
        state = broker_events.decode(broker_events.encode(state))  # as the operator keeps it
        broker_events.fold(state, broker_rows(samples), KEEP_MS)
    return state


def clause(state: broker_events.BrokerEvents, start_ms: int = T0 - 600_000, end_ms: int = T0 + 600_000) -> str | None:
    return broker_events.describe(state.events.get("prod", []), start_ms, end_ms)


def test_the_event_metrics_are_registered_and_each_is_routed_to_every_bucket():
    samples = [sample(T0, metric, 1.0) for metric in BROKER_EVENT_METRICS]
    samples += [sample(T0, "messages_in_total", 5.0), sample(T0, "under_replicated_partitions", 2.0, None, topic="t")]
    rows, buckets = route.operator_rows(pa.Table.from_pylist(samples), cluster=None, lag_routing=True)
    roles = rows.column("role").to_numpy()
    assert roles[: len(samples)].tolist() == [route.METRIC] * len(samples), "each sample once as itself"
    copies = rows.slice(len(samples)).to_pandas()
    assert (copies["role"] == route.BROKER).all()
    assert len(copies) == len(BROKER_EVENT_METRICS) * route.STATE_BUCKETS, "not messages_in, not a per-topic gauge"
    for sid, group in copies.groupby("sid"):
        assert sorted(buckets[len(samples) :][group.index]) == list(range(route.STATE_BUCKETS)), sid


def test_gauges_above_zero_counter_increases_and_a_controller_move_are_events():
    state = folded(
        [
            sample(T0, "under_replicated_partitions", 0),
            sample(T0, "isr_shrinks_total", 5),
            sample(T0, "active_controller_count", 1, "1"),
            sample(T0, "active_controller_count", 0, "2"),
        ],
        [
            sample(T0 + 15_000, "under_replicated_partitions", 3),
            sample(T0 + 15_000, "isr_shrinks_total", 7),
            sample(T0 + 15_000, "active_controller_count", 0, "1"),
            sample(T0 + 15_000, "active_controller_count", 1, "2"),
            sample(T0 + 15_000, "offline_partitions", 1, None, source="admin"),
        ],
        [
            sample(T0 + 30_000, "under_replicated_partitions", 5),
            sample(T0 + 30_000, "isr_shrinks_total", 8),
            sample(T0 + 45_000, "under_replicated_partitions", 0),
            sample(T0 + 45_000, "isr_shrinks_total", 8),
        ],
    )
    assert clause(state) == (
        "cluster: 1 offline partition at 10:02:15; "
        "broker 1: up to 5 under-replicated partitions from 10:02:15, 3 ISR shrinks from 10:02:15; "
        "broker 2: became the active controller at 10:02:15"
    )


def test_a_first_sample_a_repeat_and_a_straggler_make_no_event_and_a_restart_counts_its_new_value():
    state = folded(
        [sample(T0, "isr_shrinks_total", 40), sample(T0, "leader_elections_total", 9)],
        [sample(T0, "isr_shrinks_total", 41), sample(T0 - 5_000, "leader_elections_total", 2)],
    )
    assert clause(state) is None, "no previous sample; a repeated ts; an older sample"
    state = folded(
        [sample(T0, "isr_shrinks_total", 40)],
        [sample(T0 + 10_000, "isr_shrinks_total", 2)],  # the broker restarted: its counter began again
    )
    assert clause(state) == "broker 1: 2 ISR shrinks at 10:02:10"


def test_the_clause_covers_only_its_time_range_and_counts_each_broker_on_its_own():
    state = folded(
        [sample(T0, "isr_shrinks_total", 0, b) for b in ("1", "2", "10")],
        [sample(T0 + 10_000, "isr_shrinks_total", 1, b) for b in ("1", "2", "10")],
        [sample(T0 + 70_000, "isr_shrinks_total", 4, "2")],
    )
    assert clause(state, T0 + 60_000, T0 + 70_000) == "broker 2: 3 ISR shrinks at 10:03:10"
    assert clause(state, T0, T0 + 10_000) == (
        "broker 1: 1 ISR shrink at 10:02:10; broker 2: 1 ISR shrink at 10:02:10; broker 10: 1 ISR shrink at 10:02:10"
    )
    assert clause(state, T0 + 11_000, T0 + 69_999) is None


def test_a_clause_names_at_most_max_brokers_and_counts_the_rest():
    brokers = [str(b) for b in range(reasons.MAX_BROKERS + 3)]
    state = folded([sample(T0, "offline_partitions", 1, b) for b in brokers])
    text = clause(state)
    assert text is not None and text.endswith("; 3 more brokers with events")
    assert text.count("1 offline partition at 10:02:00") == reasons.MAX_BROKERS


def test_two_sources_of_one_broker_are_not_added_up():
    """A broker scraped over JMX and a Prometheus exporter reports each shrink twice."""
    state = folded(
        [sample(T0, "isr_shrinks_total", 0, source=source) for source in ("jmx", "prom")],
        [sample(T0 + 10_000, "isr_shrinks_total", 2, source=source) for source in ("jmx", "prom")],
    )
    assert clause(state) == "broker 1: 2 ISR shrinks at 10:02:10"


def test_the_state_forgets_what_is_older_than_keep_ms_and_holds_at_most_max_events():
    state = folded(
        [sample(T0, "isr_shrinks_total", 0), sample(T0, "under_replicated_partitions", 1, "2")],
        [sample(T0 + 1000, "isr_shrinks_total", 1)],
        [sample(T0 + 2000 + KEEP_MS, "isr_shrinks_total", 2)],
    )
    assert state.events["prod"] == [(T0 + 2000 + KEEP_MS, "1", "isr_shrinks_total", 1.0, "jmx")]
    assert len(state.series) == 1, "broker 2's series went silent longer than keep_ms"
    many = [sample(T0 + i * 100, "under_replicated_partitions", 1 + i % 3) for i in range(5000)]
    state = folded(many)
    assert len(state.events["prod"]) == broker_events.MAX_EVENTS
    assert state.events["prod"][-1][0] == T0 + 4999 * 100, "the newest kept"


def test_the_group_reason_ends_with_the_clause_when_not_ok_of_its_cluster():
    state = folded(
        [sample(T0, "under_replicated_partitions", 3), sample(T0, "under_replicated_partitions", 4, cluster="other")]
    )

    def group_reason(cluster: str, status: str, reason: str, updated_at: int) -> str:
        """A one-partition group's reason, as the lag step composes it with the cluster's broker events."""
        measured = (updated_at, 10, 20, 10, 10, None, None, None, "unknown", None, 0.0, None, None)
        report = PartitionReport(*measured, status, status.lower(), reason)
        facts = GroupFacts(broker_events=lambda: broker_events.window_clause(state, cluster, updated_at, 600_000))
        return summarize_group([("t", 0, report)], facts).reason

    reasons_by_row = [
        group_reason("prod", "WARN", "WARN: lag 90 > warn_lag 5", T0 + 60_000),
        group_reason("prod", "OK", "OK: caught up (lag 0)", T0 + 60_000),
        group_reason("prod", "STOP", "STOP: x", T0 + 700_000),
        group_reason("quiet", "STOP", "STOP: y", T0 + 60_000),
    ]
    assert reasons_by_row == [
        "WARN: lag 90 > warn_lag 5 [t/0]; 1 of 1 partitions not OK; "
        "broker 1: 3 under-replicated partitions at 10:02:00",
        "OK: caught up (lag 0) [t/0]",
        "STOP: x [t/0]; 1 of 1 partitions not OK",  # the event is older than one window before updated_at
        "STOP: y [t/0]; 1 of 1 partitions not OK",  # a cluster without events
    ]


WINDOW_S = 600
LAGGING, HEALTHY = "g-lagging", "g-ok"


def _lag_cycle(ts_ms: int, group: str, committed: int, lag: int) -> list[dict[str, Any]]:
    labels = {"source": "admin", "group_id": group, "topic": "t", "partition": 0}
    return [
        parsed_sample(ts_ms, "committed_offset", "counter", committed, **labels),
        parsed_sample(ts_ms, "consumer_lag", "gauge", lag, **labels),
    ]


@pytest.mark.slow
def test_through_spark_the_lagging_group_s_reason_names_the_broker_events_of_its_window(spark, tmp_path):
    """Batch 1: broker 1's JMX samples (URP 0 → 3, ISR shrinks 5 → 7) and the groups' first
    cycle; batch 2: the groups' next cycle only, whose rows take their reason from the state
    the broker samples left in every bucket."""
    jmx = {"source": "jmx", "broker": "1"}
    urp = parsed_sample(T0, "under_replicated_partitions", "gauge", 3, **jmx)
    batches = [
        [
            parsed_sample(T0 - 15_000, "under_replicated_partitions", "gauge", 0, **jmx),
            parsed_sample(T0 - 15_000, "isr_shrinks_total", "counter", 5, **jmx),
            urp,
            parsed_sample(T0, "isr_shrinks_total", "counter", 7, **jmx),
            *_lag_cycle(T0, LAGGING, 10, 90),
            *_lag_cycle(T0, HEALTHY, 100, 0),
        ],
        [*_lag_cycle(T0 + 30_000, LAGGING, 12, 90), *_lag_cycle(T0 + 30_000, HEALTHY, 102, 0)],
    ]
    config = LagConfig(window_s=WINDOW_S, group_thresholds={LAGGING: {"warn_lag": 5}})
    emitted = run_rollups(spark, tmp_path, batches, config, ("group_status",))

    group_bucket = route.spark_hash(["test", LAGGING]) % route.STATE_BUCKETS
    _, (urp_bucket, *_) = route.operator_rows(pa.Table.from_pylist([urp]), cluster=None, lag_routing=False)
    assert group_bucket != urp_bucket, "the broker's series lives in another bucket than the group"
    first, second = ({row.group_id: row for row in rows} for rows in emitted["group_status"])
    events = f"broker 1: 3 under-replicated partitions at {format_clock(T0)}, 2 ISR shrinks at {format_clock(T0)}"
    for rows in (first, second):
        assert rows[LAGGING].status == "WARN"
        assert rows[LAGGING].reason.endswith(f"; {events}"), rows[LAGGING].reason
        assert rows[HEALTHY].status == "OK" and "broker" not in rows[HEALTHY].reason


@pytest.mark.slow
def test_in_the_lake_a_lagging_group_names_its_broker_s_jmx_events_and_an_ok_group_does_not(
    spark: Any,
    kafka: KafkaWorkload,
    make_config: Callable[..., Config],
    unique: Callable[[str], str],
    start_jmx_double: Callable[..., JmxDouble],
) -> None:
    """Real broker → real admin and JMX collector cycles → samples topic → real Spark job → lake.

    A single-node broker cannot be made under-replicated nor shrink an ISR, so broker 1's JMX
    endpoint is the JMX test double (a JVM serving Kafka's MBeans), read by the real
    JmxCollector: the samples reach the topic exactly as the collector publishes them. Cycle 0
    reads 0 under-replicated partitions and 5 ISR shrinks, cycle 1 reads 3 and 7.
    """
    prefix = unique("events")
    topic, lagging, healthy = (f"{prefix}-{name}" for name in ("topic", "lagging", "ok"))
    kafka.create_topic(topic, 1)
    kafka.produce(topic, {0: 100})
    kafka.commit(lagging, topic, {0: 10})
    kafka.commit(healthy, topic, {0: 100})
    double = start_jmx_double()
    double.set("isr_shrinks", 5)
    config = make_config(
        collect={"interval_s": 3, "timeout_s": 3, "describe_groups": False, "groups_allow": [f"^{prefix}-"]},
        lag={"group_thresholds": {lagging: {"warn_lag": 5}}},
        jmx={"targets": [{"broker": "1", "port": double.port, "backend": "jpype"}]},
    )
    ensure_topic(transport_client_config(config), config.transport.samples_topic, config.transport.samples_partitions)

    def cycle_1_has_trouble(cycle: int) -> None:
        if cycle == 0:
            double.set("under_replicated", 3)
            double.set("isr_shrinks", 7)

    collect_then_roll_up(config, 2, cycle_1_has_trouble, also=build_jmx_collectors(config))
    con = lakelib.connect_readonly(config.resolve_path(config.lake.path), config.resolve_path(config.lake.duckdb_path))
    try:
        statuses = con.execute(
            "select group_id, status, reason, updated_at from group_status where topics = ? "
            "qualify row_number() over (partition by group_id order by updated_at desc) = 1",
            [topic],
        ).fetchall()
        jmx = con.execute(
            "select metric, max(max), max(last) - min(first) from metrics_10s "
            "where source = 'jmx' and broker = '1' and metric in (?, ?) group by metric",
            ["under_replicated_partitions", "isr_shrinks_total"],
        ).fetchall()
    finally:
        con.close()
    rows = {group: (status, reason, updated_at) for group, status, reason, updated_at in statuses}
    assert dict((metric, (worst, rise)) for metric, worst, rise in jmx) == {
        "under_replicated_partitions": (3.0, 3.0),
        "isr_shrinks_total": (7.0, 2.0),
    }, "the facts, as the lake has them"
    status, reason, updated_at = rows[lagging]
    at = updated_at.astimezone(dt.UTC).strftime("%H:%M:%S")  # cycle 1, when both were read
    assert status == "STOP" and reason.startswith("STOP: group empty for 2 cycles"), reason  # committed once, no member
    assert reason.endswith(f"; broker 1: 3 under-replicated partitions at {at}, 2 ISR shrinks at {at}"), reason
    assert rows[healthy][0] == "OK" and "broker" not in rows[healthy][1], rows[healthy][1]
