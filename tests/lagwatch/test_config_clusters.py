"""`[[clusters]]`: many clusters in one config, and `[cluster]` still the one-cluster form."""

from __future__ import annotations

import tomllib

import pytest

from lagwatch.config import ConfigError, cluster_env_prefix, parse_config

TWO_CLUSTERS = """
[collect]
groups_deny = ["^tmp-"]

[[clusters]]
name = "prod-eu"
bootstrap_servers = "kafka-eu:9092"
groups_allow = ["^orders"]
lag = { warn_lag = 5000 }
[clusters.client]
"security.protocol" = "SASL_SSL"
[[clusters.jmx.targets]]
broker = "1"
host = "kafka-eu"

[[clusters]]
name = "staging"
bootstrap_servers = "kafka-staging:9092"
"""


def test_every_entry_is_a_complete_cluster_with_collect_defaults_filled_in() -> None:
    config = parse_config(tomllib.loads(TWO_CLUSTERS), "two.toml", environ={})
    eu, staging = config.clusters
    assert (eu.name, eu.groups_allow, eu.groups_deny, eu.lag) == ("prod-eu", ["^orders"], ["^tmp-"], {"warn_lag": 5000})
    assert [t.host for t in eu.jmx.targets] == ["kafka-eu"] and staging.jmx.targets == []
    assert (staging.groups_allow, staging.groups_deny) == ([".*"], ["^tmp-"])
    assert config.cluster is eu, "the first entry is the home cluster (transport default)"
    assert config.transport_servers() == "kafka-eu:9092" and not config.embedded_broker
    assert config.cluster_named("staging") is staging


def test_the_one_cluster_form_is_one_entry_with_the_top_level_jmx_targets() -> None:
    config = parse_config(
        {"cluster": {"name": "solo", "bootstrap_servers": "k:9092"}, "jmx": {"targets": [{"broker": "7"}]}}, environ={}
    )
    assert [c.name for c in config.clusters] == ["solo"] and config.clusters[0] is config.cluster
    assert [t.broker for t in config.cluster.jmx.targets] == ["7"]
    config.source_path = "elsewhere.toml"  # an assignment re-runs validators: still one entry, targets not doubled
    assert len(config.clusters) == 1 and len(config.cluster.jmx.targets) == 1


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (
            {"cluster": {"name": "a"}, "clusters": [{"name": "b", "bootstrap_servers": "x"}]},
            "[cluster] and [[clusters]]",
        ),
        (
            {"clusters": [{"name": "a", "bootstrap_servers": "x"}, {"name": "a", "bootstrap_servers": "y"}]},
            "the name 'a' is used twice",
        ),
        ({"clusters": [{"name": "a"}]}, "clusters 'a': bootstrap_servers is required"),
        (
            {"clusters": [{"name": "a", "bootstrap_servers": "x", "lag": {"warnlag": 1}}]},
            "clusters 'a': lag: unknown threshold(s) ['warnlag']",
        ),
        (
            {"clusters": [{"name": "a", "bootstrap_servers": "x", "groups_deny": ["("]}]},
            "clusters 'a': groups_deny: bad regex '('",
        ),
        (
            {"clusters": [{"name": "a", "bootstrap_servers": "x", "jmx_targets": []}]},
            "clusters 'a': jmx_targets: unknown key",
        ),
        (
            {"clusters": [{"name": "a", "bootstrap_servers": "x"}], "jmx": {"targets": [{"broker": "1"}]}},
            "jmx.targets: with [[clusters]]",
        ),
    ],
)
def test_bad_cluster_lists_are_named(data: dict, expected: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(data, "clusters.toml", environ={})
    assert expected in str(caught.value) and "clusters.toml" in str(caught.value)


def test_each_cluster_reads_its_own_secrets_from_the_environment() -> None:
    environ = {
        cluster_env_prefix("prod-eu") + "SASL_PASSWORD": "eu-secret",
        cluster_env_prefix("staging") + "SASL_USERNAME": "stage-user",
        "LAGWATCH_CLUSTER_SASL_PASSWORD": "only-for-one-cluster",
    }
    config = parse_config(tomllib.loads(TWO_CLUSTERS), environ=environ)
    eu, staging = config.clusters
    assert cluster_env_prefix("prod-eu") == "LAGWATCH_CLUSTER_PROD_EU_"
    assert eu.client == {"security.protocol": "SASL_SSL", "sasl.password": "eu-secret"}
    assert staging.client == {"sasl.username": "stage-user"}, "the unnamed variable is ambiguous with many clusters"


def test_the_unnamed_secret_still_serves_the_one_cluster_form() -> None:
    config = parse_config({"cluster": {"bootstrap_servers": "k:1"}}, environ={"LAGWATCH_CLUSTER_SASL_PASSWORD": "pw"})
    assert config.cluster.client == {"sasl.password": "pw"}
