"""Commit-log judgement end to end: real broker commits → real collector cycles (commit log) →
samples topic → real Spark job → Parquet lake, read with DuckDB.

Three groups on one partition of 1,500 records, collected every 3 s for about 25 s:
- a rewinder commits 1000, and between two cycles 500 then 1000 again: both cycles see 1000,
  only the commit log sees the rewind;
- a staller commits offset 300 every 2 s: STALL, and still STALL well past its stop limit;
- a stopper commits a moving offset for 4 s, then nothing: STOP once its stop limit passed.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from harness.kafka_workload import KafkaWorkload
from lagwatch import lake as lakelib
from lagwatch.config import Config
from tests.spark_jobs.lake_workload import collect_then_roll_up, workload_config

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
    config = workload_config(
        make_config,
        prefix,
        INTERVAL_S,
        {staller: STOP_AFTER_S, stopper: STOP_AFTER_S},
        window_s=60,
        min_window_points=3,
    )
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

    def rewind_after_the_first_cycle(cycle: int) -> None:
        if cycle == 0:
            kafka.commit(rewinder, topic, {0: 500})  # the rewind, undone before the next cycle
            kafka.commit(rewinder, topic, {0: 1000})

    def stop_committers() -> None:
        done.set()
        thread.join()

    thread = threading.Thread(target=committers)
    thread.start()
    collect_then_roll_up(config, CYCLES, rewind_after_the_first_cycle, cleanup=[stop_committers])

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
