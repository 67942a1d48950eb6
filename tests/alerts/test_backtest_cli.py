"""`alerts backtest --rules FILE` swaps in the file's [alerts]: either cluster form survives as loaded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from alerts.backtest_cli import with_rules_file
from lagwatch.config import parse_config

TARGET = {"broker": "1", "backend": "prometheus", "url": "http://k/metrics"}
RULES = '[[alerts.rules]]\nname = "LagHigh"\nmetric = "lag"\nthreshold = 10\n'


@pytest.mark.parametrize(
    "data",
    [
        {"cluster": {"name": "one", "bootstrap_servers": "k:9092"}, "jmx": {"targets": [TARGET]}},
        {
            "clusters": [
                {"name": "eu", "bootstrap_servers": "eu:9092", "jmx": {"targets": [TARGET]}},
                {"name": "us", "bootstrap_servers": "us:9092", "groups_allow": ["^billing-"]},
            ]
        },
    ],
    ids=["[cluster]", "[[clusters]]"],
)
def test_the_clusters_come_back_as_they_were(data: dict[str, Any], tmp_path: Path) -> None:
    config = parse_config(data, environ={})
    rules = tmp_path / "rules.toml"
    rules.write_text(RULES)

    merged = with_rules_file(config, str(rules))

    assert [r.name for r in merged.alerts.rules] == ["LagHigh"]
    assert merged.clusters == config.clusters, "clusters, JMX targets (not doubled) and group lists kept"
    assert merged.cluster == config.cluster


@pytest.mark.parametrize("form", ["[cluster]", "[[clusters]]"])
def test_client_secrets_from_the_environment_are_kept(form: str, tmp_path: Path) -> None:
    """A SASL cluster's password comes from the environment into the client settings; validating
    the whole config again with it in would refuse it ('sasl.password' is a secret): only [alerts]
    is validated, so the clients stay as loaded."""
    sasl = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN"}
    if form == "[cluster]":
        data: dict[str, Any] = {"cluster": {"name": "eu", "bootstrap_servers": "eu:9092", "client": sasl}}
        environ = {"LAGWATCH_CLUSTER_SASL_USERNAME": "lagwatch", "LAGWATCH_CLUSTER_SASL_PASSWORD": "s3cret"}
    else:
        data = {"clusters": [{"name": "eu", "bootstrap_servers": "eu:9092", "client": sasl},
                             {"name": "us", "bootstrap_servers": "us:9092"}]}  # fmt: skip
        environ = {"LAGWATCH_CLUSTER_EU_SASL_USERNAME": "lagwatch", "LAGWATCH_CLUSTER_EU_SASL_PASSWORD": "s3cret"}
    environ["LAGWATCH_TRANSPORT_SASL_PASSWORD"] = "t0ken"
    config = parse_config(data, environ=environ)
    assert config.cluster.client["sasl.password"] == "s3cret"
    rules = tmp_path / "rules.toml"
    rules.write_text(RULES)

    merged = with_rules_file(config, str(rules))

    assert [r.name for r in merged.alerts.rules] == ["LagHigh"]
    assert merged.clusters == config.clusters
    assert merged.cluster.client == {**sasl, "sasl.username": "lagwatch", "sasl.password": "s3cret"}
    assert merged.transport.client == {"sasl.password": "t0ken"}
