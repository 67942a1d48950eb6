"""The vocabulary against what really runs: emitted names, the mapping table, docs, consumers.

The emitted set comes from one real `collect --once` cycle: the admin collector on the real
Kafka broker (a topic with a size limit, an empty group with commits, one commit beyond the log
end, a group with a member that owns the topic's partitions), the jpype
backend on the JMX test double (a broker target and a consumer-client target), and the
Prometheus backend on the demo's exporter text (under a broker id of its own: the demo's `sim-1`
is scraped on the embedded broker only). Every sample is read back from the
samples topic, as the Spark job would read it.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import pkgutil
import re
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource

from collectors import runner
from collectors.base import SampleFactory
from collectors.jmx.mapping import METRICS as MAPPING
from dashboard import charts, queries
from harness.jmx_double import JmxDouble
from harness.kafka_workload import KafkaWorkload
from harness.samples_topic import read_samples
from lagwatch import vocabulary
from lagwatch.config import Config
from shell import demo
from shell.broker import free_port
from tests.collectors.group_members import GroupMember, wait_for

ROOT = Path(__file__).resolve().parents[2]

#: Registered names today's test cycle cannot emit, each with who does emit it. A name emitted
#: after all must leave this list (the test fails), so it never hides a real gap.
NOT_EMITTED_HERE: dict[str, str] = {
    "share_start_offset": "the admin collector for a share group (share_groups/test_share_groups.py, Kafka 4.1+)",
    "share_group_lag": "the admin collector for a share group (share_groups/test_share_groups.py, Kafka 4.1+)",
    "partition_pending": "a consumer (KIP-848) group reconciling (commit_log/test_kip848_epochs.py, Kafka 4)",
    "consumer_group_epoch": "the commit log of a consumer (KIP-848) group (commit_log/test_kip848_epochs.py)",
    "consumer_group_member_epoch": "the commit log of a consumer (KIP-848) group (test_kip848_epochs.py)",
}
#: Added by the runner for every target, so no mapping row produces them.
RUNNER_METRICS = {"up", "scrape_duration_seconds"}
LABELS = ("broker", "topic", "partition", "group_id", "client_id", "member_id", "host")


@pytest.fixture(scope="module")
def emitted(
    broker: Any,
    jmx_double: JmxDouble,
    tmp_path_factory: pytest.TempPathFactory,
) -> list[dict[str, Any]]:
    """Every sample of one real collect cycle over every kind of target."""
    from lagwatch.config import parse_config

    suffix = tmp_path_factory.mktemp("vocab").name
    topic, group, owned = f"vocab-topic-{suffix}", f"vocab-group-{suffix}", f"vocab-owned-{suffix}"
    kafka = KafkaWorkload(broker.bootstrap_servers)
    kafka.create_topic(topic, 2)
    limit = ConfigEntry("retention.bytes", str(1 << 30), incremental_operation=AlterConfigOpType.SET)
    size_limited = ConfigResource("topic", topic, incremental_configs=[limit])  # so partition sizes are read
    admin = AdminClient(kafka.settings())  # kept until the answer: a collected client cancels its request
    admin.incremental_alter_configs([size_limited])[size_limited].result(10)
    kafka.produce(topic, {0: 5, 1: 3})
    kafka.commit(group, topic, {0: 2, 1: 1_000})  # partition 1: committed beyond the end
    member = GroupMember(broker.bootstrap_servers, owned, topic, "vocab-member", commit_offset=1)
    wait_for(lambda: member.assigned == {0, 1}, "the member to own the topic")
    topic_of_demo = demo.TOPICS[0].name
    counters = demo.DemoCounters(produced={topic_of_demo: 7}, produced_bytes={topic_of_demo: 700})
    exporter = demo.serve_exporter(counters, free_port())
    config: Config = parse_config(
        {
            "cluster": {"name": "vocab", "bootstrap_servers": broker.bootstrap_servers},
            "transport": {"samples_topic": f"vocab-samples-{suffix}"},
            "collect": {
                "timeout_s": 10,
                "coordinate": False,
                "topics_allow": [f"^{topic}$"],
                "groups_allow": [f"^{group}$", f"^{owned}$"],
            },
            "jmx": {
                "targets": [
                    {"broker": "double", "port": jmx_double.port, "backend": "jpype"},
                    {"client_id": "c1", "port": jmx_double.port, "backend": "jpype"},
                    {"broker": "exporter", "backend": "prometheus",
                     "url": exporter.url},
                ]
            },
        },
        environ={},
    )  # fmt: skip
    try:
        assert runner.run(config, argparse.Namespace(once=True)) == 0
    finally:
        member.close()
        exporter.close()
    return read_samples(config.transport_servers(), config.transport.samples_topic, expect_at_least=40)


@pytest.mark.slow
def test_every_emitted_name_is_registered_and_every_registered_name_is_emitted(emitted: list[dict[str, Any]]) -> None:
    names = {s["metric"] for s in emitted}
    assert names - vocabulary.METRIC_NAMES == set(), "emitted but not in lagwatch/vocabulary.py"
    never = vocabulary.METRIC_NAMES - names - NOT_EMITTED_HERE.keys()
    assert never == set(), "registered but nothing emitted it (emit it, or list it in NOT_EMITTED_HERE with why)"
    stale = NOT_EMITTED_HERE.keys() & names
    assert stale == set(), "now emitted: remove from NOT_EMITTED_HERE"


@pytest.mark.slow
def test_emitted_samples_match_their_registered_kind_source_and_labels(emitted: list[dict[str, Any]]) -> None:
    assert {s["source"] for s in emitted} == {"admin", "commitlog", "jmx", "prom", "heartbeat"}
    for sample in emitted:
        registered = vocabulary.metric(sample["metric"])
        assert sample["kind"] == registered.kind, sample
        assert sample["source"] in registered.sources, sample
        labels = {label for label in LABELS if sample.get(label) is not None}
        assert labels <= set(registered.labels), sample


def test_a_collector_cannot_publish_an_unregistered_name_kind_or_source() -> None:
    make = SampleFactory(cluster="c", collector="i")
    make(ts=1, source="admin", metric="broker_count", kind="gauge", value=1)
    cases = [
        ("admin", "request_handler_idle_ratio", "gauge", "'request_handler_idle_ratio' is not in lagwatch.vocabulary"),
        ("admin", "broker_count", "counter", "'broker_count' is a gauge, not a counter"),
        ("jmx", "broker_count", "gauge", "'broker_count' is not published by source 'jmx'"),
    ]
    for source, metric, kind, message in cases:
        with pytest.raises(ValueError, match=re.escape(message)):
            make(ts=1, source=source, metric=metric, kind=kind, value=1)


def test_the_mapping_table_maps_every_jmx_name_and_only_registered_ones() -> None:
    mapped = {d.metric for d in MAPPING}
    assert mapped <= vocabulary.METRIC_NAMES
    jmx_names = {m.name for m in vocabulary.METRICS if "jmx" in m.sources} - RUNNER_METRICS
    assert mapped == jmx_names
    for definition in MAPPING:
        registered = vocabulary.metric(definition.metric)
        assert (definition.kind, definition.unit) == (registered.kind, registered.unit)


def test_docs_tables_are_generated_from_the_vocabulary() -> None:
    text = (ROOT / "docs" / "metrics.md").read_text()
    assert vocabulary.render_docs(text) == text, "docs/metrics.md is stale: run `python -m lagwatch.vocabulary`"
    for metric in vocabulary.METRICS:
        assert f"| `{metric.name}` | {metric.kind} | {metric.unit} |" in text


def _quoted_metric_names(sql: str) -> set[str]:
    """Names compared with the `metric` column: `metric = 'x'` and `metric IN ('x', 'y')`."""
    found = set(re.findall(r"metric\s*=\s*'([^']+)'", sql))
    for group in re.findall(r"metric\s+IN\s*\(([^)]*)\)", sql):
        found |= set(re.findall(r"'([^']+)'", group))
    return found


def _module_literal(path: Path, name: str) -> Any:
    """A module-level constant of a Streamlit page, read without running the page."""
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == name for t in node.targets):
            return ast.literal_eval(node.value)
    raise AssertionError(f"{name} not found in {path}")


def _query_modules() -> list[Any]:
    """Every module of the dashboard.queries package: each page keeps its SQL in its own."""
    return [importlib.import_module(f"{queries.__name__}.{m.name}") for m in pkgutil.iter_modules(queries.__path__)]


def test_dashboard_queries_and_pages_name_only_registered_metrics() -> None:
    used: set[str] = set()
    for module in _query_modules():
        for name, sql in vars(module).items():
            if name.startswith("SQL_"):
                used |= _quoted_metric_names(sql)
    assert {"up", "log_end_offset", "messages_in_total", "collector_targets_assigned"} <= used
    used |= {metric for metric, _ in _module_literal(ROOT / "dashboard/views/overview.py", "HEALTH_TILES")}
    used |= set(_module_literal(ROOT / "dashboard/views/brokers.py", "BALANCE_METRICS"))
    assert used - vocabulary.METRIC_NAMES == set()


def test_a_selection_of_an_unregistered_name_fails_at_import() -> None:
    with pytest.raises(KeyError, match=re.escape("'bytes_rejected_total' is not in lagwatch.vocabulary")):
        vocabulary.require("bytes_in_total", "bytes_rejected_total")


def test_status_order_has_one_home() -> None:
    from alerts import evaluate
    from spark_jobs.lag import group

    assert vocabulary.STATUS_ORDER == ("OK", "WARN", "REWIND", "STALL", "STOP", "ERR", "LOSS")
    assert group.STATUS_SEVERITY is vocabulary.STATUS_SEVERITY
    assert evaluate.STATUS_ORDER is vocabulary.STATUS_ORDER
    assert set(charts.STATUS_COLOURS) == set(vocabulary.STATUS_ORDER)
    assert charts.STATUSES_WORST_FIRST[0] == "LOSS"
    with pytest.raises(ValueError, match="unknown status 'LOST'"):
        vocabulary.status_rank("LOST")


def test_group_status_is_the_worst_partition_by_the_vocabulary_order() -> None:
    """REWIND outranks WARN though it sorts after it alphabetically: the order is the vocabulary's."""
    from spark_jobs.lag.group import summarize_group
    from spark_jobs.lag.tracker import PartitionReport

    def report(status: str) -> PartitionReport:
        measured = (1, 10, 20, 10, 10, None, None, None, "unknown", None, 0.0, None, None)
        return PartitionReport(*measured, status, status.lower(), status)

    worst = summarize_group([("t", 0, report("WARN")), ("t", 1, report("REWIND")), ("t", 2, report("OK"))])
    assert worst.status == "REWIND"
