"""LOSS and the retention margin end to end: real broker retention → real collector cycle →
samples topic → real Spark job → Parquet lake.

A topic with 1 KB segments that expire after 1 s gets 180 records in 6 segments; one group
committed 30 of them, another all 180 and then the 7 records produced after retention is
lengthened. Once the broker has deleted every expired segment, the first group's status is
LOSS with the records the broker deleted unread (log start − committed), and the second's
retention margin is the 7 records between the log start and its commit.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic

from harness.kafka_workload import KafkaWorkload
from harness.real_kafka import RealKafkaBroker
from lagwatch import lake as lakelib
from lagwatch.config import Config
from tests.collectors.admin.test_admin import (
    RETENTION_BATCH,
    RETENTION_BATCHES,
    earliest_offset,
    retention_topic_config,
)
from tests.collectors.group_members import wait_for
from tests.spark_jobs.lake_workload import collect_then_roll_up, workload_config

LOSSY_COMMIT, KEPT_AFTER = 30, 7


@pytest.mark.slow
def test_loss_counts_the_records_the_broker_deleted_unread(
    spark: Any,
    kafka: KafkaWorkload,
    broker: RealKafkaBroker,
    make_config: Callable[..., Config],
    unique: Callable[[str], str],
):
    prefix = unique("loss")
    topic, lossy, safe = (f"{prefix}-{name}" for name in ("topic", "lossy", "safe"))
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([NewTopic(topic, 1, 1, config=retention_topic_config(broker))])[topic].result(10)
    for _ in range(RETENTION_BATCHES):  # one flush per batch: one segment each
        kafka.produce(topic, {0: RETENTION_BATCH})
    produced = RETENTION_BATCHES * RETENTION_BATCH
    kafka.commit(lossy, topic, {0: LOSSY_COMMIT})
    wait_for(lambda: earliest_offset(admin, topic, 0) == produced, "retention deleted every expired segment")
    keep = ConfigResource("topic", topic, incremental_configs=[
        ConfigEntry("retention.ms", "3600000", incremental_operation=AlterConfigOpType.SET)])  # fmt: skip
    admin.incremental_alter_configs([keep])[keep].result(10)
    kafka.produce(topic, {0: KEPT_AFTER})
    kafka.commit(safe, topic, {0: produced + KEPT_AFTER})
    deleted_unread = earliest_offset(admin, topic, 0) - LOSSY_COMMIT

    config = workload_config(make_config, prefix, 3, {})
    collect_then_roll_up(config, 1)
    con = lakelib.connect_readonly(config.resolve_path(config.lake.path), config.resolve_path(config.lake.duckdb_path))
    try:
        rows = con.execute(
            "select group_id, status, reason, retention_margin, retention_margin_s from lag_1m where topic = ?",
            [topic],
        ).fetchall()
        groups = dict(con.execute("select group_id, status from group_status where topics = ?", [topic]).fetchall())
    finally:
        con.close()
    by_group = {group: rest for group, *rest in rows}
    assert deleted_unread == produced - LOSSY_COMMIT > 0
    assert by_group[lossy][0] == "LOSS"
    assert by_group[lossy][1].startswith(
        f"LOSS: {deleted_unread} records deleted unread (committed offset {LOSSY_COMMIT} < log start {produced})"
    )
    assert (by_group[lossy][2], by_group[lossy][3]) == (-deleted_unread, 0.0)
    assert by_group[safe][0] == "OK" and by_group[safe][2] == KEPT_AFTER
    assert groups == {lossy: "LOSS", safe: "OK"}
