"""Quiet topics are not stopped consumers, end to end: real broker → real collector cycles
(commit log) → samples topic → real Spark job → Parquet lake.

Two groups on one partition of 200 records, committed once each and then silent, collected
every 3 s for about 15 s, with a stop limit of 8 s:
- a quiet consumer committed 200 (caught up) and no record arrives after it: OK (caught_up),
  however long it has not committed;
- a dead consumer committed 50 and left 150 unread: STOP, the same silence with lag.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import pytest

from collectors.admin import AdminCollector
from collectors.coordinator import AllTargets
from collectors.publisher import SamplePublisher
from collectors.runner import CollectLoop
from lagwatch.config import Config
from lagwatch.kafka import ensure_topic, transport_client_config
from spark_jobs import job
from tests.fixtures.kafka_workload import KafkaWorkload
from tests.spark_jobs.test_commit_log_lake import newest_rows

STOP_AFTER_S = 8
CYCLES = 6
INTERVAL_S = 3.0


@pytest.mark.slow
def test_a_caught_up_group_on_a_quiet_topic_stays_ok_while_a_lagging_one_stops(
    spark: Any, kafka: KafkaWorkload, make_config: Callable[..., Config], unique: Callable[[str], str]
):
    prefix = unique("quiet")
    topic, quiet, dead = (f"{prefix}-{name}" for name in ("topic", "quiet", "dead"))
    kafka.create_topic(topic, 1)
    kafka.produce(topic, {0: 200})
    limits = {"stop_after_s": STOP_AFTER_S}
    config = make_config(
        collect={"interval_s": INTERVAL_S, "timeout_s": 2, "describe_groups": False, "groups_allow": [f"^{prefix}-"]},
        lag={"window_s": 60, "min_window_points": 3, "group_thresholds": {quiet: limits, dead: limits}},
    )
    transport = transport_client_config(config)
    ensure_topic(transport, config.transport.samples_topic, config.transport.samples_partitions)
    kafka.commit(quiet, topic, {0: 200})
    kafka.commit(dead, topic, {0: 50})
    collector = AdminCollector(config)
    publisher = SamplePublisher(config)
    loop = CollectLoop(config, [collector], publisher, AllTargets([collector.name]), "test-instance")
    try:
        for cycle in range(CYCLES):
            if cycle:
                time.sleep(INTERVAL_S)  # lets the silence grow past the stop limit; nothing here is timed
            assert loop.cycle().failed == []
    finally:
        loop.close()
        assert publisher.close() == 0

    assert job.run(config, argparse.Namespace(available_now=True)) == 0

    for table in ("lag_1m", "group_status"):
        newest = newest_rows(config, table, [quiet, dead])
        assert {group: status for group, (status, _) in newest.items()} == {quiet: "OK", dead: "STOP"}, table
        assert newest[quiet][1].startswith("OK: caught up (lag 0)"), newest[quiet]
        assert newest[dead][1].startswith("STOP: no commit for "), newest[dead]
