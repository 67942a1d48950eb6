"""The runner builds one admin collector per cluster and JMX collectors for each cluster's targets.

Built from a validated config (no cluster needs to answer: collectors connect at their first
cycle). What is checked is what coordination and the samples depend on: names unique across
clusters and unchanged in the one-cluster form, each collector's cluster, and each admin
collector's own client settings and group lists.
"""

from __future__ import annotations

from typing import Any

import pytest

from collectors.admin.collector import AdminCollector
from collectors.runner import build_collectors
from lagwatch.config import parse_config
from lagwatch.kafka import EMBEDDED_BOOTSTRAP_ENV, EMBEDDED_DEMO_ENV, cluster_client_config, use_embedded_broker
from shell.broker import cluster_for

#: JMX targets on the prometheus backend, so building the collectors starts no JVM. Both clusters
#: have a broker 1 behind the same proxy URL: only the cluster in the name tells them apart.
TWO_CLUSTERS: dict[str, Any] = {
    "collect": {"groups_allow": ["^orders-"]},
    "clusters": [
        {
            "name": "eu",
            "bootstrap_servers": "kafka-eu:9092",
            "client": {"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN"},
            "groups_deny": ["-test$"],
            "jmx": {"targets": [{"broker": "1", "backend": "prometheus", "url": "http://proxy/m1"}]},
        },
        {
            "name": "us-east",
            "bootstrap_servers": "kafka-us:9092",
            "groups_allow": ["^billing-"],
            "jmx": {
                "targets": [
                    {"broker": "1", "backend": "prometheus", "url": "http://proxy/m1"},
                    {"broker": "2", "backend": "prometheus", "url": "http://kafka-us/m2"},
                ]
            },
        },
    ],
}


def test_one_admin_collector_per_cluster_and_each_clusters_jmx_targets() -> None:
    config = parse_config(TWO_CLUSTERS, environ={})
    collectors = build_collectors(config)
    by_name = {c.name: c.cluster_name for c in collectors}
    assert by_name == {
        "admin@eu": "eu",
        "admin@us-east": "us-east",
        "eu/broker-1@http://proxy/m1": "eu",
        "us-east/broker-1@http://proxy/m1": "us-east",
        "us-east/broker-2@http://kafka-us/m2": "us-east",
    }
    assert len(by_name) == len(collectors), "a target name is used twice"


def test_each_admin_collector_has_its_clusters_settings_and_group_lists() -> None:
    config = parse_config(TWO_CLUSTERS, environ={"LAGWATCH_CLUSTER_EU_SASL_PASSWORD": "s3cret"})
    admins = {c.cluster_name: c for c in build_collectors(config) if isinstance(c, AdminCollector)}
    assert admins["eu"]._settings == {
        "bootstrap.servers": "kafka-eu:9092",
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "PLAIN",
        "sasl.password": "s3cret",
    }
    assert admins["us-east"]._settings == {"bootstrap.servers": "kafka-us:9092"}
    eu, us = admins["eu"]._group_allowed, admins["us-east"]._group_allowed
    assert eu("orders-1") and not eu("orders-test") and not eu("billing-1"), "eu: [collect] allow, its own deny"
    assert us("billing-1") and not us("orders-1"), "us-east: its own allow list"


def test_the_client_factory_gives_each_cluster_its_own_settings() -> None:
    config = parse_config(TWO_CLUSTERS, environ={"LAGWATCH_CLUSTER_US_EAST_SASL_USERNAME": "svc"})
    eu, us = config.clusters
    assert cluster_client_config(config, us) == {"bootstrap.servers": "kafka-us:9092", "sasl.username": "svc"}
    assert cluster_client_config(config) == cluster_client_config(config, eu), "the home cluster by default"
    assert cluster_client_config(config)["bootstrap.servers"] == "kafka-eu:9092"


def test_the_one_cluster_form_keeps_its_target_names() -> None:
    config = parse_config(
        {
            "cluster": {"name": "prod", "bootstrap_servers": "k:9092"},
            "jmx": {"targets": [{"broker": "3", "backend": "prometheus", "url": "http://k/metrics"}]},
        },
        environ={},
    )
    collectors = build_collectors(config)
    assert [(c.name, c.cluster_name) for c in collectors] == [
        ("admin@prod", "prod"),
        ("broker-3@http://k/metrics", "prod"),
    ]


SIMULATED_URL = "http://127.0.0.1:7171/metrics"
#: An older shipped config: the demo's simulated target listed under [[jmx.targets]].
OLD_SIMULATED_TARGET = {"broker": "sim-1", "backend": "prometheus", "url": "http://127.0.0.1:7071/metrics"}


def test_the_embedded_broker_scrapes_the_demo_s_simulated_jmx_and_a_configured_cluster_does_not() -> None:
    """The simulated target belongs to the demo, which runs on the embedded broker only: a
    configured cluster is watched, so nothing of the demo is scraped beside it."""
    demo = {"jmx_sim_port": 7171}
    embedded = parse_config({"demo": demo}, environ={})
    configured = parse_config({"cluster": {"bootstrap_servers": "k:9092"}, "demo": demo}, environ={})
    from_env = parse_config({"demo": demo}, environ={"LAGWATCH_BOOTSTRAP_SERVERS": "k:9092"})
    assert [c.name for c in build_collectors(embedded)] == ["admin@local", f"broker-sim-1@{SIMULATED_URL}"]
    assert [c.name for c in build_collectors(configured)] == ["admin@local"]
    assert [c.name for c in build_collectors(from_env)] == ["admin@local"]


def test_the_embedded_broker_keeps_the_simulated_jmx_once_a_command_has_started_it() -> None:
    """`use_embedded_broker` fills in the started broker's address: it must still count as embedded."""
    config = parse_config({"demo": {"jmx_sim_port": 7171}}, environ={})
    use_embedded_broker(config, "127.0.0.1:20123")
    assert not config.embedded_broker and config.on_embedded_broker
    assert [c.name for c in build_collectors(config)] == ["admin@local", f"broker-sim-1@{SIMULATED_URL}"]


def test_the_embedded_broker_without_the_demo_scrapes_no_simulated_jmx(monkeypatch: pytest.MonkeyPatch) -> None:
    """`lagwatch up --no-demo` on the embedded broker: nothing serves the simulator, so a scrape of it
    would only be a broker that is always down. `up` tells its children through the environment."""
    config = parse_config({"demo": {"jmx_sim_port": 7171}}, environ={})
    monkeypatch.setenv(EMBEDDED_BOOTSTRAP_ENV, "127.0.0.1:20123")
    monkeypatch.setenv(EMBEDDED_DEMO_ENV, "0")
    with cluster_for(config) as started:
        assert started.on_embedded_broker
        assert [c.name for c in build_collectors(started)] == ["admin@local"]
    monkeypatch.setenv(EMBEDDED_DEMO_ENV, "1")
    with cluster_for(parse_config({"demo": {"jmx_sim_port": 7171}}, environ={})) as started:
        assert [c.name for c in build_collectors(started)] == ["admin@local", f"broker-sim-1@{SIMULATED_URL}"]


def test_an_older_config_listing_the_simulated_target_loads_and_scrapes_it_on_the_embedded_broker_only(
    caplog: pytest.LogCaptureFixture,
) -> None:
    old_embedded = parse_config({"jmx": {"targets": [OLD_SIMULATED_TARGET]}}, environ={})
    assert "remove this target" in caplog.text
    old_configured = parse_config(
        {"cluster": {"bootstrap_servers": "k:9092"}, "jmx": {"targets": [OLD_SIMULATED_TARGET]}}, environ={}
    )
    sim = "broker-sim-1@http://127.0.0.1:7071/metrics"
    assert [c.name for c in build_collectors(old_embedded)] == ["admin@local", sim], "listed once, not twice"
    assert [c.name for c in build_collectors(old_configured)] == ["admin@local"]
