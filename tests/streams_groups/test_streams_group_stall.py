"""A streams group (KIP-1071) whose task is stuck is STALL with its owner named, end to end on
Kafka 4.x: a real Kafka Streams application (StuckTaskApp, `group.protocol=streams`, two stream
threads so two members) → real admin collector cycles → samples topic → real Spark job → lake.

The application reads everything produced, and one cycle and stream pass see it OK. Then a
`stall` record blocks partition 0's task (its stream thread stops polling but its member stays
in the group, owning the task) while more records arrive on both partitions: partition 1's task
reads them, partition 0's committed offset stands still. Two more cycles (``lag.stall_cycles``)
and a pass later the group is STALL by rule stall_owned, the reason naming the member the
broker's own tool says owns partition 0, which shows the exact lag the tool reports.

The stop rule precedes stall_owned and counts silence from the last caught-up observation, which
here is before the first stream pass: that pass alone can outlast the default `stop_after_s`, so
this group's is raised (as for any group that may rightly sit still that long) and the standstill
is left to stall_owned.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer

from harness.kafka_streams import STALL_VALUE, STUCK_TASK_THREADS, StuckTaskApp
from harness.kafka_workload import KafkaWorkload
from lagwatch.config import Config
from tests.spark_jobs.lake_workload import collect_then_roll_up, lake_rows, workload_config
from tests.streams_groups.word_count import command_lag, command_members, wait_running

INTERVAL_S = 5.0
CYCLES = 2  # after the stall: lag.stall_cycles observations at one committed offset
PARTITIONS = 2
STUCK = 0  # the partition whose task gets stuck
BEFORE = {0: 10, 1: 10}
AFTER = {0: 7, 1: 5}  # produced after the stall record on partition 0
STOP_AFTER_S = 600.0
NEWEST_STATUS = (
    "select status, rule, reason, group_state, members, group_type from group_status where group_id = ? "
    "qualify row_number() over (order by updated_at desc) = 1"
)
NEWEST_LAG = (
    "select partition, committed_offset, lag, status, rule, owner_member_id, owner_client_id, owner_host, group_type "
    "from lag_1m where group_id = ? and topic = ? "
    "qualify row_number() over (partition by partition order by window_start desc) = 1 order by partition"
)


@pytest.mark.slow
def test_a_streams_app_whose_task_is_stuck_is_stall_naming_its_owner(
    spark: Any, broker: Any, make_config: Callable[..., Config], unique: Callable[[str], str], tmp_path: Path
) -> None:
    if broker.version < (4, 2, 0):
        pytest.skip(f"streams groups are production-ready from Kafka 4.2 (broker {broker.version_text})")
    workload = KafkaWorkload(broker.bootstrap_servers)
    topic = unique("stuck-input")
    workload.create_topic(topic, PARTITIONS)
    workload.produce(topic, BEFORE)
    prefix = unique("sg")
    group = f"{prefix}-stuck"
    config = workload_config(make_config, prefix, INTERVAL_S, {group: STOP_AFTER_S})
    app = StuckTaskApp(broker.home, broker.bootstrap_servers, group, tmp_path / "app", topic).start()

    try:
        wait_running(broker, app, PARTITIONS, STUCK_TASK_THREADS)
        _wait_lag(broker, group, {(topic, p): 0 for p in range(PARTITIONS)})
        collect_then_roll_up(config, 1)
        running_status = lake_rows(config, NEWEST_STATUS, [group])

        _produce_stall(workload, topic, STUCK)
        workload.produce(topic, AFTER)
        stuck_lag = 1 + AFTER[STUCK]  # the stall record and everything after it
        _wait_lag(broker, group, {(topic, p): stuck_lag if p == STUCK else 0 for p in range(PARTITIONS)})
        owners = _command_owners(broker, group)
        collect_then_roll_up(config, CYCLES)
        stuck_status = lake_rows(config, NEWEST_STATUS, [group])
        stuck_rows = lake_rows(config, NEWEST_LAG, [group, topic])
    finally:
        app.stop()
    assert not app.running

    [(status, _, reason, state, members, group_type)] = running_status
    assert (status, state, members, group_type) == ("OK", "Stable", STUCK_TASK_THREADS, "streams"), reason
    assert owners[STUCK] != owners[1 - STUCK], f"both tasks on one member: {owners}"
    [stuck_row, moving_row] = stuck_rows if STUCK == 0 else stuck_rows[::-1]
    (member_id, client_id), host = owners[STUCK], stuck_row[7]
    assert stuck_row == (STUCK, BEFORE[STUCK], stuck_lag, "STALL", "stall_owned", member_id, client_id, host, "streams")
    moved_to = BEFORE[1 - STUCK] + AFTER[1 - STUCK]
    assert moving_row == (1 - STUCK, moved_to, 0, "OK", "caught_up", *owners[1 - STUCK], moving_row[7], "streams")
    [(status, rule, reason, state, members, group_type)] = stuck_status
    assert (status, rule, state, members, group_type) == ("STALL", "stall_owned", "Stable", 2, "streams"), reason
    assert host, stuck_row
    assert reason.startswith(f"STALL: committed offset {BEFORE[STUCK]} unchanged at {CYCLES} cycles ("), reason
    assert f" while {client_id} on {host} owns it, lag {stuck_lag} [{topic}/{STUCK}]" in reason, reason


def _produce_stall(workload: KafkaWorkload, topic: str, partition: int) -> None:
    """The one record that blocks StuckTaskApp's task for the partition."""
    producer = Producer(workload.settings(acks="all"))
    producer.produce(topic, value=STALL_VALUE.encode(), partition=partition)
    assert producer.flush(30) == 0, f"the {STALL_VALUE} record was not delivered to {topic}/{partition}"


def _wait_lag(broker: Any, group: str, expected: dict[tuple[str, int], int], timeout_s: float = 90.0) -> None:
    """Until the broker's own tool shows the group's lag as expected (the reference the lake is held to)."""
    deadline = time.monotonic() + timeout_s
    while (lag := command_lag(broker, group)) != expected:
        assert time.monotonic() < deadline, f"{group}: lag {lag}, waited for {expected}"
        time.sleep(1)


def _command_owners(broker: Any, group: str) -> dict[int, tuple[str, str]]:
    """Input partition → (member id, client id) of the member whose active task reads it, per the
    broker's own tool (StuckTaskApp's one subtopology is "0": task 0_N reads partition N)."""
    return {
        partition: (member_id, client_id)
        for member_id, (_, client_id, kinds) in command_members(broker, group).items()
        for partition in kinds.get("ACTIVE", {}).get("0", ())
    }
