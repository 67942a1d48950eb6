"""Commit-log judgement end to end: real broker commits → real collector cycles (commit log) →
samples topic → real Spark job → Parquet lake, read with DuckDB.

Three groups on one partition of 1,500 records, collected every 3 s for about 25 s:
- a rewinder commits 1000, and between two cycles 500 then 1000 again: both cycles see 1000,
  only the commit log sees the rewind;
- a staller commits offset 300 every 2 s: STALL, and still STALL well past its stop limit;
- a stopper commits a moving offset for 4 s, then nothing: STOP once its stop limit passed.
"""

from __future__ import annotations

import argparse
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from collectors.admin import AdminCollector
from collectors.coordinator import AllTargets
from collectors.publisher import SamplePublisher
from collectors.runner import CollectLoop
from lagwatch import lake as lakelib
from lagwatch.config import Config
from lagwatch.kafka import ensure_topic, transport_client_config
from spark_jobs import job
from tests.fixtures.kafka_workload import KafkaWorkload

STOP_AFTER_S = 8
CYCLES = 9
INTERVAL_S = 3.0


def newest_rows(config: Config, table: str, groups: list[str]) -> dict[str, tuple[str, str]]:
    """(status, reason) of each group's newest row in `table`."""
    con = lakelib.connect_readonly(config.resolve_path(config.lake.path), config.resolve_path(config.lake.duckdb_path))
    time_column = "window_start" if table == "lag_1m" else "updated_at"
    try:
        rows = con.execute(
            f"select group_id, status, reason from {table} where group_id in ({', '.join('?' for _ in groups)}) "
            f"qualify row_number() over (partition by group_id order by {time_column} desc) = 1",
            groups,
        ).fetchall()
    finally:
        con.close()
    return {group: (status, reason) for group, status, reason in rows}


@pytest.mark.slow
def test_rewind_stall_and_stop_from_the_commit_log_reach_the_lake(
    spark: Any, kafka: KafkaWorkload, make_config: Callable[..., Config], unique: Callable[[str], str]
):
    prefix = unique("cl")
    topic, rewinder, staller, stopper = (f"{prefix}-{name}" for name in ("topic", "rewinder", "staller", "stopper"))
    kafka.create_topic(topic, 1)
    kafka.produce(topic, {0: 1500})
    limits = {"stop_after_s": STOP_AFTER_S}
    config = make_config(
        collect={"interval_s": INTERVAL_S, "timeout_s": 2, "describe_groups": False, "groups_allow": [f"^{prefix}-"]},
        lag={"window_s": 60, "min_window_points": 3, "group_thresholds": {staller: limits, stopper: limits}},
    )
    transport = transport_client_config(config)
    ensure_topic(transport, config.transport.samples_topic, config.transport.samples_partitions)
    kafka.commit(rewinder, topic, {0: 1000})

    done = threading.Event()

    def committers() -> None:
        tick = 0
        while not done.wait(1.0):
            tick += 1
            if tick % 2 == 0:
                kafka.commit(staller, topic, {0: 300})
            if tick <= 4:
                kafka.commit(stopper, topic, {0: 100 + 10 * tick})

    thread = threading.Thread(target=committers)
    thread.start()
    collector = AdminCollector(config)
    publisher = SamplePublisher(config)
    loop = CollectLoop(config, [collector], publisher, AllTargets([collector.name]), "test-instance")
    try:
        assert loop.cycle().failed == []
        kafka.commit(rewinder, topic, {0: 500})  # the rewind, undone before the next cycle
        kafka.commit(rewinder, topic, {0: 1000})
        for _ in range(CYCLES - 1):
            time.sleep(INTERVAL_S)  # lets the workload run; nothing here is timed
            assert loop.cycle().failed == []
    finally:
        done.set()
        thread.join()
        loop.close()
        assert publisher.close() == 0

    assert job.run(config, argparse.Namespace(available_now=True)) == 0

    groups = [rewinder, staller, stopper]
    for table in ("lag_1m", "group_status"):
        newest = newest_rows(config, table, groups)
        assert {group: status for group, (status, _) in newest.items()} == {
            rewinder: "REWIND",
            staller: "STALL",
            stopper: "STOP",
        }, table
        assert newest[rewinder][1].startswith("REWIND: a commit went back from 1000 to 500 at ")
        assert newest[staller][1].startswith("STALL: ") and " commits of offset 300 in " in newest[staller][1]
        assert newest[stopper][1].startswith("STOP: no commit for ")
        assert "> stop_after_s 8s (last commit at " in newest[stopper][1]
