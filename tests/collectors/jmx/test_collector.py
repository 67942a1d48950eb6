"""JmxCollector: per-target backend choice, timeouts and labels; what both remote backends share."""

from __future__ import annotations

import argparse

import pytest

from collectors import runner
from collectors.jmx.collector import JmxCollector, build_jmx_collectors
from collectors.jmx.jmxquery_backend import JmxqueryBackend
from collectors.jmx.jpype_backend import JpypeBackend
from collectors.jmx.mapping import metrics_for
from collectors.jmx.prometheus_backend import PrometheusBackend
from harness.jmx_double import ExporterServer, JmxDouble, SilentPort
from harness.samples_topic import read_samples
from lagwatch.config import parse_config
from tests.collectors.jmx.support import MAKE, TS, broken_definition, scrape, set_known_values, values


def _config(targets: list[dict[str, object]]):  # type: ignore[no-untyped-def]
    """A configured cluster's targets: on the embedded broker the demo's simulated one would join them."""
    cluster = {"bootstrap_servers": "kafka1:9092"}
    return parse_config({"cluster": cluster, "collect": {"timeout_s": 4}, "jmx": {"targets": targets}}, environ={})


def test_one_collector_per_target_with_its_backend_and_timeout() -> None:
    config = _config(
        [
            {"broker": "1", "port": 9991, "backend": "jpype"},
            {"broker": "2", "port": 9992, "backend": "jmxquery", "timeout_s": 2},
            {"broker": "3", "backend": "prometheus", "url": "http://127.0.0.1:1/metrics"},
            {"client_id": "app-1", "port": 9994, "backend": "jpype"},
        ]
    )
    collectors = build_jmx_collectors(config)
    assert [c.name for c in collectors] == [t.name for t in config.jmx.targets]
    assert [type(c.backend) for c in collectors] == [JpypeBackend, JmxqueryBackend, PrometheusBackend, JpypeBackend]  # type: ignore[attr-defined]
    assert [c.timeout_s for c in collectors] == [4, 2, 4, 4]  # type: ignore[attr-defined]
    assert [c.source for c in collectors] == ["jmx", "jmx", "prom", "jmx"]
    assert collectors[0].labels == {"broker": "1", "client_id": None}
    assert collectors[3].labels == {"broker": None, "client_id": "app-1"}
    assert {d.metric for d in collectors[3].definitions} == {"records_lag_max", "records_consumed_rate"}  # type: ignore[attr-defined]


def test_password_comes_from_the_named_environment_variable(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("LAGWATCH_JMX_PW_B1", "from-env")
    config = _config([{"broker": "1", "backend": "jmxquery", "username": "mon", "password_env": "LAGWATCH_JMX_PW_B1"}])
    backend = build_jmx_collectors(config)[0].backend  # type: ignore[attr-defined]
    assert (backend.username, backend.password) == ("mon", "from-env")


def test_collect_stamps_samples_with_the_target_labels(jmx_double: JmxDouble) -> None:
    jmx_double.set("messages_in:payments", 31337)
    config = _config([{"broker": "b-9", "port": jmx_double.port, "backend": "jpype"}])
    collector = build_jmx_collectors(config)[0]
    assert isinstance(collector, JmxCollector)
    result = collector.collect(TS, MAKE)
    collector.close()
    assert result.ok and result.target == collector.name
    sample = next(s for s in result.samples if s.metric == "messages_in_total" and s.topic == "payments")
    assert (sample.value, sample.broker, sample.ts, sample.cluster, sample.source) == (31337, "b-9", TS, "test", "jmx")
    assert all(s.broker == "b-9" and s.client_id is None for s in result.samples)


@pytest.mark.parametrize("backend", ["jpype", "jmxquery"])
def test_remote_backends_read_every_broker_metric_with_the_double_s_values(backend: str, jmx_double: JmxDouble) -> None:
    expected = set_known_values(jmx_double, seed=1000 if backend == "jmxquery" else 2000)
    result = scrape(backend=backend, port=jmx_double.port)
    assert result.ok, result.errors
    assert result.errors == []
    got = values(result)
    for key, value in expected.items():
        assert got[key] == value, key
    assert {s.source for s in result.samples} == {"jmx"}
    assert {(s.metric, s.kind) for s in result.samples} == {(d.metric, d.kind) for d in metrics_for("broker")}


@pytest.mark.parametrize("backend", ["jpype", "jmxquery"])
def test_remote_backends_read_consumer_fetch_metrics_of_a_client_target(backend: str, jmx_double: JmxDouble) -> None:
    lag = 987 if backend == "jpype" else 4321
    jmx_double.set("records_lag_max", lag)
    jmx_double.set("records_consumed_rate", 3.5)
    result = scrape(backend=backend, port=jmx_double.port, broker=None, client_id="c1")
    assert result.ok, result.errors
    assert values(result) == {("records_lag_max", None, "c1"): float(lag), ("records_consumed_rate", None, "c1"): 3.5}


@pytest.mark.parametrize("backend", ["jpype", "jmxquery"])
def test_remote_backends_fail_a_silent_port_within_the_timeout(backend: str, silent_port: SilentPort) -> None:
    result = scrape(backend=backend, port=silent_port.port, timeout_s=2)
    assert not result.ok
    assert "no answer within 2 s" in result.errors[0]
    assert silent_port.accepted >= 1  # it really connected and hung; the scrape still returned


@pytest.mark.parametrize("backend", ["jpype", "jmxquery"])
def test_remote_backends_fail_only_the_metric_of_a_bad_or_missing_object_name(
    backend: str, jmx_double: JmxDouble
) -> None:
    partitions = 77 if backend == "jmxquery" else 88
    jmx_double.set("partition_count", partitions)
    definitions = [
        *metrics_for("broker"),
        broken_definition("kafka.server:type=ReplicaManager,name=", "malformed"),
        broken_definition("kafka.server:type=ReplicaManager,name=NoSuchGauge", "missing"),
    ]
    result = scrape(definitions, backend=backend, port=jmx_double.port)
    assert result.ok
    assert result.errors == [
        "kafka.server:type=ReplicaManager,name=/Value: bad ObjectName: key property 'name' has an empty value",
        "kafka.server:type=ReplicaManager,name=NoSuchGauge/Value: no such MBean or attribute",
    ]
    assert values(result)[("partition_count", None, None)] == partitions


@pytest.mark.slow
def test_collect_once_publishes_jmx_samples_and_up_per_target(  # type: ignore[no-untyped-def]
    make_config, jmx_double: JmxDouble, silent_port: SilentPort, exporter_server: ExporterServer
) -> None:
    """One real `collect --once` cycle on tansu: every backend's samples, and up = 0 for a hung target."""
    jmx_double.set("messages_in:orders", 5150)
    exporter_server.text = 'kafka_server_brokertopicmetrics_messagesin_total{topic="orders"} 6160\n'
    config = make_config(
        collect={"timeout_s": 3, "interval_s": 5, "coordinate": False},
        jmx={
            "targets": [
                {"broker": "jp", "port": jmx_double.port, "backend": "jpype"},
                {"broker": "jq", "port": jmx_double.port, "backend": "jmxquery"},
                {"broker": "pr", "backend": "prometheus", "url": exporter_server.url},
                {"broker": "hung", "port": silent_port.port, "backend": "jpype"},
            ]
        },
    )
    assert runner.run(config, argparse.Namespace(once=True)) == 0
    samples = read_samples(config.transport_servers(), config.transport.samples_topic, expect_at_least=10)
    up = {s["broker"]: s["value"] for s in samples if s["metric"] == "up" and s["source"] in ("jmx", "prom")}
    assert up == {"jp": 1.0, "jq": 1.0, "pr": 1.0, "hung": 0.0}
    orders = {
        (s["broker"], s["source"]): s["value"]
        for s in samples
        if s["metric"] == "messages_in_total" and s["topic"] == "orders"
    }
    assert orders == {("jp", "jmx"): 5150.0, ("jq", "jmx"): 5150.0, ("pr", "prom"): 6160.0}
    assert not [s for s in samples if s["broker"] == "hung" and s["metric"] not in ("up", "scrape_duration_seconds")]
