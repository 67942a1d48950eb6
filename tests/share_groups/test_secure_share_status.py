"""Judged end to end on the secured Kafka (harness/secure_kafka.py: SASL_SSL, SCRAM-SHA-512, the
StandardAuthorizer): real collector cycles logged in as a principal holding only the grants
`lagwatch/acls.py` lists for a monitored cluster → samples topic → real Spark job → lake → the
real alert engine → a real webhook.

The collector is configured as an operator would: the security settings in the file, the login
from LAGWATCH_CLUSTER_SASL_*. The samples go to a transport cluster of its own (the session's
plaintext broker), so the monitoring principal stays read-only. The workloads (a ShareConsumer,
producers, commits) run as the super user.

- A share group whose member stops acknowledging while records wait is STALL, naming the
  member; once the member leaves it is STOP (the PLAINTEXT test: tests/spark_jobs/test_share_group_lake.py).
- A retention.bytes topic produced to under a stopped group's commit fires RetentionMarginLow
  from the partition sizes DescribeLogDirs reads on SASL_SSL, while the broker still has the
  committed record (the PLAINTEXT test: tests/spark_jobs/test_retention_margin_lake.py).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AclOperation, AdminClient, NewTopic, ResourceType

from alerts.engine import AlertEngine
from alerts.leader import AlwaysLeader
from collectors.admin.collector import AdminCollector
from collectors.coordinator import AllTargets
from collectors.publisher import SamplePublisher
from collectors.runner import CollectLoop
from harness.real_kafka import RealKafkaBroker
from harness.secure_kafka import ADMIN_USER, Acl, SecureKafkaBroker, monitor_config, new_scram_user
from lagwatch import acls
from lagwatch.config import Config
from lagwatch.kafka import ensure_topic, transport_client_config
from spark_jobs import job
from tests.collectors.admin.test_admin import earliest_offset
from tests.collectors.share_groups.share_members import ShareMember
from tests.spark_jobs.lake_workload import lake_rows
from tests.spark_jobs.test_share_group_lake import INTERVAL_S, PRODUCED, judge_stall_then_stop

CLUSTER = "secured-test"
NEWEST_MARGIN = (
    "select retention_limit, retention_margin_s, retention_reason from lag_1m where group_id = ? "
    "qualify row_number() over (order by window_start desc) = 1"
)

MARGIN_INTERVAL_S = 3.0
BATCHES, BATCH = 6, 30  # one segment per flushed batch (1 KB segments)
#: About 7 such segments: with the commit after the first batch, the size margin is under the
#: rule's threshold once a produce rate is known (the PLAINTEXT test's numbers).
SIZE_LIMIT = 4000
COMMITTED = 30
MARGIN_DEADLINE_S = 90.0
#: RetentionMarginLow without `for` and with a threshold a few cycles of produce can reach.
RULE = {
    "name": "RetentionMarginLow",
    "metric": "retention_margin_s",
    "by": ["group_id", "topic", "partition"],
    "op": "<",
    "threshold": 45,
    "severity": "critical",
    "summary": "Retention reaches {group_id}'s committed offset on {topic}/{partition} in {value:.0f} s ({reason})",
}
_KINDS = {"cluster": ResourceType.BROKER, "topic": ResourceType.TOPIC, "group": ResourceType.GROUP}
_OPERATIONS = {"Describe": AclOperation.DESCRIBE, "DescribeConfigs": AclOperation.DESCRIBE_CONFIGS,
               "Read": AclOperation.READ}  # fmt: skip


def documented_acls(config: Config) -> list[Acl]:
    """Exactly what `lagwatch/acls.py` lists for the monitored cluster of this config, nothing else."""
    return [
        Acl(_KINDS[grant.need.resource], grant.name, _OPERATIONS[grant.need.operation])
        for grant in acls.grants(config, "monitored")
    ]


def secured_config(
    secure_broker: SecureKafkaBroker,
    broker: RealKafkaBroker,
    tmp_path: Path,
    unique: Callable[[str], str],
    collect: dict[str, Any],
    alerts: dict[str, Any] | None = None,
) -> Config:
    """A new least-privilege principal, and the config that collects as it (samples on `broker`)."""
    sections = {
        "transport": {"bootstrap_servers": broker.bootstrap_servers, "samples_topic": unique("samples")},
        "lake": {"path": str(tmp_path / "lake"), "duckdb_path": str(tmp_path / "lagwatch.duckdb")},
        "spark": {"checkpoint_dir": str(tmp_path / "checkpoints")},
        "alerts": {"state_dir": str(tmp_path / "alerts"), "use_default_rules": False, **(alerts or {})},
    }
    user = unique("share-monitor")
    draft = monitor_config(secure_broker, user, "unused", cluster=CLUSTER, sections=sections, **collect)
    _, password = new_scram_user(secure_broker, user, documented_acls(draft))
    config = monitor_config(secure_broker, user, password, cluster=CLUSTER, sections=sections, **collect)
    ensure_topic(transport_client_config(config), config.transport.samples_topic, config.transport.samples_partitions)
    return config


@pytest.mark.slow
def test_on_sasl_ssl_a_share_group_that_stops_acknowledging_is_stall_then_stop_when_closed(
    spark: Any,
    secure_broker: SecureKafkaBroker,
    broker: RealKafkaBroker,
    tmp_path: Path,
    unique: Callable[[str], str],
) -> None:
    if secure_broker.version < (4, 1, 0):
        pytest.skip(f"share groups are GA from Kafka 4.1 (broker {secure_broker.version_text})")
    prefix = unique("secured-sg")
    topic, group = f"{prefix}-topic", f"{prefix}-group"
    workload = secure_broker.admin_workload()
    workload.create_topic(topic, 1)
    workload.produce(topic, {0: PRODUCED})
    collect = {"interval_s": INTERVAL_S, "timeout_s": 4, "describe_groups": False, "commit_log": "off",
               "groups_allow": [f"^{prefix}-"]}  # fmt: skip
    config = secured_config(secure_broker, broker, tmp_path, unique, collect)
    admin = secure_broker.client_settings(ADMIN_USER)
    member = ShareMember(secure_broker.bootstrap_servers, group, topic, "share-client", admin)
    judge_stall_then_stop(config, member, group)


def _firing(webhook_receiver: Any) -> list[tuple[str, str]]:
    """(group_id, summary) of every RetentionMarginLow alert sent firing."""
    alerts = webhook_receiver.alerts(alertname="RetentionMarginLow")
    return [(alert["labels"]["group_id"], alert["annotations"]["summary"]) for alert in alerts]


@pytest.mark.slow
def test_on_sasl_ssl_retention_margin_low_fires_from_partition_sizes_before_the_records_go(
    spark: Any,
    secure_broker: SecureKafkaBroker,
    broker: RealKafkaBroker,
    tmp_path: Path,
    unique: Callable[[str], str],
    webhook_receiver: Any,
) -> None:
    prefix = unique("secured-margin")
    topic, group = f"{prefix}-topic", f"{prefix}-group"
    settings = {secure_broker.segment_bytes_config: "1024", "retention.ms": "-1", "retention.bytes": str(SIZE_LIMIT)}
    admin = AdminClient(secure_broker.client_settings(ADMIN_USER))
    admin.create_topics([NewTopic(topic, 1, 1, config=settings)])[topic].result(10)
    collect = {"interval_s": MARGIN_INTERVAL_S, "timeout_s": MARGIN_INTERVAL_S, "describe_groups": False,
               "commit_log": "off", "groups_allow": [f"^{prefix}-"]}  # fmt: skip
    alerts = {"rules": [RULE], "receivers": [{"name": "ops", "url": webhook_receiver.url}], "group_wait": "0s",
              "leadership": "none"}  # fmt: skip
    config = secured_config(secure_broker, broker, tmp_path, unique, collect, alerts)
    workload = secure_broker.admin_workload()
    for _ in range(BATCHES):
        workload.produce(topic, {0: BATCH})
    workload.commit(group, topic, {0: COMMITTED})

    publisher = SamplePublisher(config)
    loop = CollectLoop(config, [AdminCollector(config)], publisher, AllTargets([f"admin@{CLUSTER}"]), "t")
    engine = AlertEngine(config, leadership=AlwaysLeader("test"))
    kept_when_fired: bool | None = None
    margins: list[tuple[str | None, float | None, str]] = []
    deadline = time.monotonic() + MARGIN_DEADLINE_S
    try:
        while kept_when_fired is None and time.monotonic() < deadline:
            workload.produce(topic, {0: BATCH})  # a produce rate, and the size limit deleting
            assert loop.cycle().failed == []
            assert publisher.flush() == 0
            kept = earliest_offset(admin, topic, 0) <= COMMITTED  # before the Spark pass: no later
            assert job.run(config, argparse.Namespace(available_now=True)) == 0
            engine.step(now=time.time())
            margins += lake_rows(config, NEWEST_MARGIN, [group])
            if any(g == group for g, _ in _firing(webhook_receiver)):
                kept_when_fired = kept
            else:
                time.sleep(MARGIN_INTERVAL_S)
    finally:
        engine.close()
        loop.close()
        assert publisher.close() == 0

    assert kept_when_fired is True, f"fired while the broker kept the committed record ({margins})"
    [summary] = [s for g, s in _firing(webhook_receiver) if g == group]
    assert f"(size limit nearer: retention.bytes {SIZE_LIMIT} per partition, " in summary
    limit, margin_s, reason = margins[-1]
    assert limit == "size" and 0 <= margin_s < RULE["threshold"], margins
    assert reason.startswith(f"size limit nearer: retention.bytes {SIZE_LIMIT} per partition"), reason
    assert not any("the partition size is unknown" in r for _, _, r in margins), "DescribeLogDirs read it"
