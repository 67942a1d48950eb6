"""Quiet topics are not stopped consumers, end to end: real broker → real collector cycles
(commit log) → samples topic → real Spark job → Parquet lake.

Two groups on one partition of 200 records, committed once each and then silent, collected
every 3 s for about 15 s, with a stop limit of 8 s:
- a quiet consumer committed 200 (caught up) and no record arrives after it: OK (caught_up),
  however long it has not committed;
- a dead consumer committed 50 and left 150 unread: STOP, the same silence with lag (its group
  is Empty, with no commit since).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from harness.kafka_workload import KafkaWorkload
from lagwatch.config import Config
from tests.spark_jobs.lake_workload import collect_then_roll_up, workload_config
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
    config = workload_config(
        make_config, prefix, INTERVAL_S, {quiet: STOP_AFTER_S, dead: STOP_AFTER_S}, window_s=60, min_window_points=3
    )
    kafka.commit(quiet, topic, {0: 200})
    kafka.commit(dead, topic, {0: 50})
    collect_then_roll_up(config, CYCLES)  # the silence grows past the stop limit

    for table in ("lag_1m", "group_status"):
        newest = newest_rows(config, table, [quiet, dead])
        assert {group: status for group, (status, _) in newest.items()} == {quiet: "OK", dead: "STOP"}, table
        assert newest[quiet][1].startswith("OK: caught up (lag 0)"), newest[quiet]
        # Committed without joining (as assign() consumers do) and never again: the group is Empty
        # (ListGroups says so, without DescribeGroups) with no commit since, so membership decides.
        assert newest[dead][1].startswith("STOP: group empty for "), newest[dead]
