"""A share group (KIP-932) judged end to end on Kafka 4.x: a real ShareConsumer → real admin
collector cycles (share groups read over the protocol) → samples topic → real Spark job → lake.

The issue's Done-when, with the shipped lag defaults and a 5 s collector interval: 1,000 records
produced, the consumer acknowledges the first 300 and stops acknowledging while it stays in the
group. After three cycles and one stream pass its partition shows share lag 700 exactly and the
group is STALL, naming the member; with the consumer closed, three more cycles and a pass later
it is STOP (empty group, no acknowledgement since).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from harness.kafka_workload import KafkaWorkload
from lagwatch.config import Config
from tests.collectors.share_groups.share_members import ShareMember
from tests.spark_jobs.lake_workload import collect_then_roll_up, lake_rows, workload_config

INTERVAL_S = 5.0
CYCLES = 3
PRODUCED, ACKNOWLEDGED = 1000, 300
NEWEST_STATUS = (
    "select status, rule, reason, group_state, members, group_type from group_status where group_id = ? "
    "qualify row_number() over (order by updated_at desc) = 1"
)
NEWEST_LAG = (
    "select lag, owner_client_id, group_type from lag_1m where group_id = ? "
    "qualify row_number() over (order by window_start desc) = 1"
)


@pytest.mark.slow
def test_a_share_group_that_stops_acknowledging_is_stall_then_stop_when_closed(
    spark: Any, kafka: KafkaWorkload, broker: Any, make_config: Callable[..., Config], unique: Callable[[str], str]
) -> None:
    if broker.version < (4, 1, 0):
        pytest.skip(f"share groups are GA from Kafka 4.1 (broker {broker.version_text})")
    prefix = unique("sg")
    topic, group = f"{prefix}-topic", f"{prefix}-group"
    kafka.create_topic(topic, 1)
    kafka.produce(topic, {0: PRODUCED})
    config = workload_config(make_config, prefix, INTERVAL_S, {})
    judge_stall_then_stop(config, ShareMember(broker.bootstrap_servers, group, topic, "share-client"), group)


def judge_stall_then_stop(config: Config, member: ShareMember, group: str) -> None:
    """The member acknowledges ACKNOWLEDGED of PRODUCED records and stays: STALL naming it; closed: STOP."""
    try:
        member.acknowledge_first(ACKNOWLEDGED)
        collect_then_roll_up(config, CYCLES)
        stalled = lake_rows(config, NEWEST_STATUS, [group])
        stalled_lag = lake_rows(config, NEWEST_LAG, [group])
    finally:
        member.close()
    collect_then_roll_up(config, CYCLES)
    stopped = lake_rows(config, NEWEST_STATUS, [group])
    stopped_lag = lake_rows(config, NEWEST_LAG, [group])

    assert stalled_lag == [(PRODUCED - ACKNOWLEDGED, "share-client", "share")]
    [(status, rule, reason, state, members, group_type)] = stalled
    assert (status, rule, state, members, group_type) == ("STALL", "stall_owned", "Stable", 1, "share"), reason
    assert "while share-client on /127.0.0.1 owns it" in reason and f"lag {PRODUCED - ACKNOWLEDGED}" in reason

    assert stopped_lag == [(PRODUCED - ACKNOWLEDGED, None, "share")]
    [(status, rule, reason, state, members, group_type)] = stopped
    assert (status, rule, state, members, group_type) == ("STOP", "stop_empty", "Empty", 0, "share"), reason
