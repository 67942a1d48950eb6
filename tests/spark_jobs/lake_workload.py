"""A real-broker lag workload end to end: the config, the collector cycles, then the Spark job
over what they published (what the commit-log, quiet-topic and LOSS lake tests share)."""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from collectors.admin.collector import AdminCollector
from collectors.base import Collector
from collectors.coordinator import AllTargets
from collectors.publisher import SamplePublisher
from collectors.runner import CollectLoop
from lagwatch import lake as lakelib
from lagwatch.config import Config
from lagwatch.kafka import ensure_topic, transport_client_config
from spark_jobs import job


def workload_config(
    make_config: Callable[..., Config],
    prefix: str,
    interval_s: float,
    stop_after: dict[str, float],
    describe_groups: bool = False,
    **lag: Any,
) -> Config:
    """Collect groups named `prefix-…` every interval_s (membership only with describe_groups);
    `stop_after`: group → stop_after_s."""
    collect = {"interval_s": interval_s, "timeout_s": 2, "describe_groups": describe_groups}
    config = make_config(
        collect={**collect, "groups_allow": [f"^{prefix}-"]},
        lag={"group_thresholds": {group: {"stop_after_s": s} for group, s in stop_after.items()}, **lag},
    )
    ensure_topic(transport_client_config(config), config.transport.samples_topic, config.transport.samples_partitions)
    return config


def collect_then_roll_up(
    config: Config,
    cycles: int,
    after_cycle: Callable[[int], None] = lambda _: None,
    cleanup: Iterable[Callable[[], None]] = (),
    also: Sequence[Collector] = (),
) -> None:
    """Run `cycles` collector cycles `interval_s` apart (after_cycle(i) runs right after cycle i),
    publish them, then run the Spark job once over everything published. The admin collector
    runs in every cycle, with the collectors in `also` beside it (same cycle ts)."""
    collectors = [AdminCollector(config), *also]
    publisher = SamplePublisher(config)
    names = [collector.name for collector in collectors]
    loop = CollectLoop(config, collectors, publisher, AllTargets(names), "test-instance")
    try:
        for cycle in range(cycles):
            if cycle:
                time.sleep(config.collect.interval_s)  # lets the workload run; nothing here is timed
            assert loop.cycle().failed == []
            after_cycle(cycle)
    finally:
        for step in cleanup:
            step()
        loop.close()
        assert publisher.close() == 0
    assert job.run(config, argparse.Namespace(available_now=True)) == 0


def lake_rows(config: Config, sql: str, params: Any = None) -> list[tuple]:
    """Rows of one DuckDB query over the config's lake (read-only)."""
    con = lakelib.connect_readonly(config.resolve_path(config.lake.path), config.resolve_path(config.lake.duckdb_path))
    try:
        return con.execute(sql, params).fetchall()
    finally:
        con.close()
