"""Lagwatch on a secured Kafka (SASL_SSL, SCRAM-SHA-512, StandardAuthorizer) as a least-privilege user.

The broker is `harness.secure_kafka`: the monitoring users hold exactly the ACLs
docs/operations.md ("Secured clusters") documents, or that set minus one grant, and every
topic, record and committed group is made by the super user. Secrets reach Lagwatch only
through the LAGWATCH_CLUSTER_SASL_* environment variables, never the config file.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from collectors.admin.collector import AdminCollector
from collectors.base import SampleFactory, ScrapeResult
from harness import secure_kafka
from harness.kafka_workload import KafkaWorkload
from harness.processes import run_lagwatch
from harness.real_kafka import RealKafkaBroker
from harness.samples_topic import read_samples
from harness.secure_kafka import (
    MONITOR,
    MONITOR_NO_COMMIT_LOG,
    MONITOR_SOME_GROUPS,
    MONITOR_SOME_GROUPS_NO_CLUSTER,
    VISIBLE_GROUP_PREFIX,
    SecureKafkaBroker,
    secrets_env,
)
from lagwatch.config import Config
from lagwatch.vocabulary import GROUPS_NOT_VISIBLE_METRIC

CLUSTER = "secured-test"
MAKE = SampleFactory(cluster=CLUSTER, collector="test-instance")
PRODUCED = {0: 10, 1: 7}
COMMITTED = {0: 4, 1: 7}
LAG = {0: 6, 1: 0}


def monitor_config(broker: SecureKafkaBroker, user: str, **collect: Any) -> Config:
    return secure_kafka.monitor_config(broker, user, cluster=CLUSTER, **collect)


@pytest.fixture(scope="module")
def admin_kafka(secure_broker: SecureKafkaBroker) -> KafkaWorkload:
    return secure_broker.admin_workload()


@pytest.fixture
def lagging_group(admin_kafka: KafkaWorkload, unique: Callable[[str], str]) -> tuple[str, str]:
    """A topic and a group lagging on it by LAG, both made by the super user."""
    topic, group = unique("secured-topic"), unique("secured-group")
    admin_kafka.create_topic(topic, len(PRODUCED))
    admin_kafka.produce(topic, PRODUCED)
    admin_kafka.commit(group, topic, COMMITTED)
    return topic, group


@pytest.fixture
def collector_of(secure_broker: SecureKafkaBroker) -> Iterator[Callable[..., AdminCollector]]:
    made: list[AdminCollector] = []

    def make(user: str, **collect: Any) -> AdminCollector:
        made.append(AdminCollector(monitor_config(secure_broker, user, **collect)))
        return made[-1]

    yield make
    for collector in made:
        collector.close()


def by_partition(result: ScrapeResult, metric: str, group: str, source: str = "admin") -> dict[int | None, float]:
    return {
        s.partition: s.value
        for s in result.samples
        if s.metric == metric and s.group_id == group and s.source == source
    }


def gauge(result: ScrapeResult, metric: str) -> list[float]:
    return [s.value for s in result.samples if s.metric == metric]


def write_config(path: Path, broker: SecureKafkaBroker, transport: RealKafkaBroker, ca: Path | None = None) -> Path:
    """A config.toml as the docs show it: SASL_SSL settings in [cluster.client], no secret."""
    client = "\n".join(f'"{key}" = "{value}"' for key, value in broker.security_settings(ca).items())
    path.write_text(
        f'[cluster]\nname = "{CLUSTER}"\nbootstrap_servers = "{broker.bootstrap_servers}"\n'
        f"[cluster.client]\n{client}\n"
        f'[transport]\nbootstrap_servers = "{transport.bootstrap_servers}"\nsamples_topic = "samples-{path.stem}"\n'
        "[collect]\ninterval_s = 15\ntimeout_s = 10\ncoordinate = false\n"
    )
    return path


@pytest.mark.slow
def test_collect_once_as_the_monitor_user_publishes_exact_lag(
    secure_broker: SecureKafkaBroker,
    broker: RealKafkaBroker,
    lagging_group: tuple[str, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
):
    """`lagwatch collect --once` on the secured cluster, samples to a separate (plain) transport cluster."""
    topic, group = lagging_group
    config = write_config(tmp_path / "secured.toml", secure_broker, broker)
    for var, value in secrets_env(secure_broker, MONITOR).items():
        monkeypatch.setenv(var, value)
    proc = run_lagwatch(config, "collect", "--once")
    assert proc.returncode == 0, proc.stderr
    samples = read_samples(broker.bootstrap_servers, f"samples-{config.stem}", expect_at_least=10)

    def published(metric: str) -> dict[int, float]:
        return {
            s["partition"]: s["value"]
            for s in samples
            if s["metric"] == metric and s["group_id"] == group and s["topic"] == topic and s["source"] == "admin"
        }

    assert published("committed_offset") == COMMITTED
    assert published("consumer_lag") == LAG
    assert [s["value"] for s in samples if s["metric"] == GROUPS_NOT_VISIBLE_METRIC] == [0.0]
    assert [s["value"] for s in samples if s["metric"] == "up"] == [1.0], "the admin target scraped"


def test_monitor_with_the_commit_log_grant_reads_lag_from_the_commit_log(
    collector_of: Callable[..., AdminCollector], lagging_group: tuple[str, str], admin_kafka: KafkaWorkload
):
    topic, group = lagging_group
    collector = collector_of(MONITOR, groups_allow=[f"^{group}$"], topics_allow=[f"^{topic}$"])
    for cycle in range(10):  # the first load may take longer than half a cycle on a busy host
        result = collector.collect(1_700_000_000_000 + cycle * 15_000, MAKE)
        assert result.ok, result.errors
        if gauge(result, "commit_log_in_use") == [1.0]:
            break
    assert gauge(result, "commit_log_in_use") == [1.0], "the commit log was never usable with its grant"
    assert by_partition(result, "consumer_lag", group) == LAG
    assert gauge(result, GROUPS_NOT_VISIBLE_METRIC) == [0.0]


def test_without_read_on_the_commit_log_auto_falls_back_and_names_the_acl_once(
    collector_of: Callable[..., AdminCollector],
    lagging_group: tuple[str, str],
    caplog: pytest.LogCaptureFixture,
):
    _topic, group = lagging_group
    collector = collector_of(MONITOR_NO_COMMIT_LOG, commit_log="auto", groups_allow=[f"^{group}$"])
    results = []
    with caplog.at_level(logging.INFO, logger="collectors.admin.collector"):
        for cycle in range(3):
            results.append(collector.collect(1_700_000_000_000 + cycle * 15_000, MAKE))
    for result in results:
        assert result.ok, result.errors
        assert gauge(result, "commit_log_in_use") == [0.0]
        assert by_partition(result, "committed_offset", group) == COMMITTED, "from OffsetFetch"
        assert by_partition(result, "consumer_lag", group) == LAG
    said = [r.getMessage() for r in caplog.records if "Read on topic __consumer_offsets" in r.getMessage()]
    assert len(said) == 1, said
    assert "committed offsets from OffsetFetch" in said[0]
    assert "TOPIC_AUTHORIZATION_FAILED" in said[0]


def test_groups_without_describe_are_counted_and_named_not_dropped(
    collector_of: Callable[..., AdminCollector],
    admin_kafka: KafkaWorkload,
    unique: Callable[[str], str],
    caplog: pytest.LogCaptureFixture,
):
    """With Describe on the cluster, ListGroups names every group; those the principal may not
    describe are reported by count (the gauge) and by name (the log), not as missing lag."""
    topic, tag = unique("secured-topic"), unique("tag")
    visible, hidden = f"{VISIBLE_GROUP_PREFIX}{tag}", [f"hidden-{tag}-a", f"hidden-{tag}-b"]
    admin_kafka.create_topic(topic, len(PRODUCED))
    admin_kafka.produce(topic, PRODUCED)
    for group in (visible, *hidden):
        admin_kafka.commit(group, topic, COMMITTED)
    collector = collector_of(MONITOR_SOME_GROUPS, groups_allow=[tag])
    with caplog.at_level(logging.WARNING, logger="collectors.admin.group_visibility"):
        result = collector.collect(1_700_000_000_000, MAKE)
    assert result.ok, result.errors
    assert by_partition(result, "consumer_lag", visible) == LAG
    assert gauge(result, GROUPS_NOT_VISIBLE_METRIC) == [2.0]
    [line] = [r.getMessage() for r in caplog.records if "not visible" in r.getMessage()]
    assert all(name in line for name in hidden), line
    assert visible not in line
    assert not [e for e in result.errors if "AUTHORIZATION" in e], "reported as not visible, not as errors"


def test_without_cluster_describe_only_groups_named_literally_can_be_known(
    collector_of: Callable[..., AdminCollector], admin_kafka: KafkaWorkload, unique: Callable[[str], str]
):
    """ListGroups leaves hidden groups out: a literal name in groups_allow is counted, an unnamed
    hidden group cannot be known (docs/operations.md says so)."""
    topic, tag = unique("secured-topic"), unique("tag")
    visible, named, unnamed = f"{VISIBLE_GROUP_PREFIX}{tag}", f"hidden-{tag}-named", f"hidden-{tag}-unnamed"
    admin_kafka.create_topic(topic, len(PRODUCED))
    admin_kafka.produce(topic, PRODUCED)
    for group in (visible, named, unnamed):
        admin_kafka.commit(group, topic, COMMITTED)
    collector = collector_of(MONITOR_SOME_GROUPS_NO_CLUSTER, groups_allow=[f"^{visible}$", f"^{named}$", "^hidden-"])
    result = collector.collect(1_700_000_000_000, MAKE)
    assert result.ok, result.errors
    assert by_partition(result, "consumer_lag", visible) == LAG
    assert gauge(result, GROUPS_NOT_VISIBLE_METRIC) == [1.0], "the named group only"
    assert not [s for s in result.samples if s.group_id in (named, unnamed)]


@pytest.mark.parametrize(
    ("wrong", "cause"),
    [("password", "authentication failed"), ("certificate", "TLS certificate is not trusted")],
)
def test_collect_fails_at_start_naming_the_cluster_and_the_cause(
    secure_broker: SecureKafkaBroker,
    broker: RealKafkaBroker,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    wrong: str,
    cause: str,
):
    ca = secure_broker.certificates.untrusted_ca if wrong == "certificate" else None
    config = write_config(tmp_path / "refused.toml", secure_broker, broker, ca=ca)
    password = "not-the-password" if wrong == "password" else None
    for var, value in secrets_env(secure_broker, MONITOR, password).items():
        monkeypatch.setenv(var, value)
    proc = run_lagwatch(config, "collect", "--once")
    assert proc.returncode == 3, proc.stderr
    assert f"cluster {CLUSTER!r}" in proc.stderr
    assert cause in proc.stderr
    assert "did not answer" not in proc.stderr
    assert "Traceback" not in proc.stderr


def test_without_describe_configs_the_retention_settings_are_missed_once_by_name_not_as_errors(
    collector_of: Callable[..., AdminCollector],
    admin_kafka: KafkaWorkload,
    unique: Callable[[str], str],
    caplog: pytest.LogCaptureFixture,
):
    """The retention margin's one optional grant: without it, one warning naming the grant, and
    the cycle stays whole (no error per topic, lag exact)."""
    topic, tag = unique("secured-topic"), unique("tag")
    visible = f"{VISIBLE_GROUP_PREFIX}{tag}"
    admin_kafka.create_topic(topic, len(PRODUCED))
    admin_kafka.produce(topic, PRODUCED)
    admin_kafka.commit(visible, topic, COMMITTED)
    collector = collector_of(MONITOR_SOME_GROUPS, groups_allow=[tag])  # no DescribeConfigs on topics
    with caplog.at_level(logging.WARNING, logger="collectors.admin.collector"):
        results = [collector.collect(1_700_000_000_000 + cycle * 15_000, MAKE) for cycle in range(2)]
    assert all(r.ok and not r.errors for r in results), [r.errors for r in results]
    assert by_partition(results[0], "consumer_lag", visible) == LAG
    said = [r.getMessage() for r in caplog.records if "grant DescribeConfigs" in r.getMessage()]
    assert len(said) == 1 and topic in said[0], said
    assert not [s for r in results for s in r.samples if s.metric == "topic_retention_ms" and s.topic == topic]
