"""A streams group (KIP-1071) judged end to end on Kafka 4.x: a real Kafka Streams application
(WordCountDemo, `group.protocol=streams`) → real admin collector cycles (the group read over the
protocol, its commits from the commit log) → samples topic → real Spark job → lake.

With the shipped lag defaults and a 5 s collector interval: the application reads everything
produced, and one cycle and stream pass see it running (the group OK and Stable, one member
owning its input partitions, lag 0). Then it is stopped (it leaves the group) while 30 + 20
more input lines arrive: three more cycles and a pass later the group is STOP (empty group, no commit since), its input
partitions show lag 30 and 20 exactly, and every row says `group_type` streams.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness.kafka_streams import INPUT_TOPIC
from harness.kafka_workload import KafkaWorkload
from lagwatch.config import Config
from tests.spark_jobs.lake_workload import collect_then_roll_up, lake_rows, workload_config
from tests.streams_groups.word_count import INPUT_PARTITIONS, command_lag, start_word_count

INTERVAL_S = 5.0
CYCLES = 3  # after it stopped: lag.empty_cycles is 2
ADDED = {0: 30, 1: 20}
NEWEST_STATUS = (
    "select status, rule, reason, group_state, members, group_type from group_status where group_id = ? "
    "qualify row_number() over (order by updated_at desc) = 1"
)
NEWEST_LAG = (
    "select partition, lag, owner_client_id, group_type from lag_1m where group_id = ? and topic = ? "
    "qualify row_number() over (partition by partition order by window_start desc) = 1 order by partition"
)


@pytest.mark.slow
def test_a_streams_app_stopped_while_its_input_grows_is_stop(
    spark: Any, broker: Any, make_config: Callable[..., Config], unique: Callable[[str], str], tmp_path: Path
) -> None:
    if broker.version < (4, 2, 0):
        pytest.skip(f"streams groups are production-ready from Kafka 4.2 (broker {broker.version_text})")
    workload = KafkaWorkload(broker.bootstrap_servers)
    workload.create_topic(INPUT_TOPIC, INPUT_PARTITIONS)
    workload.produce(INPUT_TOPIC, {0: 10, 1: 10})
    prefix = unique("sg")
    group = f"{prefix}-wordcount"
    config = workload_config(make_config, prefix, INTERVAL_S, {})
    app, running = start_word_count(broker, group, tmp_path / "app")
    [member] = running.members

    try:
        _wait_caught_up(broker, group)
        collect_then_roll_up(config, 1)
        running_status = lake_rows(config, NEWEST_STATUS, [group])
        running_lag = lake_rows(config, NEWEST_LAG, [group, INPUT_TOPIC])
    finally:
        app.stop()
    workload.produce(INPUT_TOPIC, ADDED)
    collect_then_roll_up(config, CYCLES)
    stopped_status = lake_rows(config, NEWEST_STATUS, [group])
    stopped_lag = lake_rows(config, NEWEST_LAG, [group, INPUT_TOPIC])

    [(status, _, reason, state, members, group_type)] = running_status
    assert (status, state, members, group_type) == ("OK", "Stable", 1, "streams"), reason
    assert running_lag == [(p, 0, member.client_id, "streams") for p in range(INPUT_PARTITIONS)]
    [(status, rule, reason, state, members, group_type)] = stopped_status
    assert (status, rule, state, members, group_type) == ("STOP", "stop_empty", "Empty", 0, "streams"), reason
    assert stopped_lag == [(p, added, None, "streams") for p, added in ADDED.items()]


def _wait_caught_up(broker: Any, group: str, timeout_s: float = 60.0) -> None:
    """Until the broker's own tool shows the group's four partitions read to their ends."""
    deadline = time.monotonic() + timeout_s
    while (lag := command_lag(broker, group)) == {} or len(lag) < 2 * INPUT_PARTITIONS or any(lag.values()):
        assert time.monotonic() < deadline, f"{group} not caught up: {lag}"
        time.sleep(1)
