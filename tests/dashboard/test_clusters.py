"""Many clusters in one dashboard: every page's queries keep to the picked cluster, the All
clusters page sums up each, and the picker lists configured and lake clusters.

DuckDB over the real lake files of the known lake (test-cluster) with prod-eu's rows written
beside it (harness/lake_rows.py); expected values are derived from those rows.
"""

from __future__ import annotations

import datetime as dt
import math

import pandas as pd
from streamlit.testing.v1 import AppTest

from dashboard.queries import Lake, Scope
from dashboard.queries import clusters as cluster_queries
from dashboard.queries.loaders import PAGE_LOADERS
from lagwatch.config import load_config
from lagwatch.vocabulary import STATUS_ORDER
from tests.dashboard.conftest import (
    CLUSTER,
    QUIET_CLUSTER,
    SECOND_CLUSTER,
    SECOND_GROUPS,
    KnownLake,
    group_status,
)
from tests.dashboard.test_pages import APP, open_page


def scope(lake: KnownLake, cluster: str) -> Scope:
    return Scope(cluster, lake.now - dt.timedelta(hours=1), dt.datetime.now(dt.UTC) + dt.timedelta(minutes=1))


def lake_of(lake: KnownLake) -> Lake:
    return Lake.from_config(load_config(lake.config_path))


def test_every_page_loader_keeps_to_the_picked_cluster(two_clusters: KnownLake) -> None:
    lake = lake_of(two_clusters)
    eu = {name: PAGE_LOADERS[name](lake, scope(two_clusters, SECOND_CLUSTER)) for name in PAGE_LOADERS}
    home = {name: PAGE_LOADERS[name](lake, scope(two_clusters, CLUSTER)) for name in PAGE_LOADERS}
    assert dict(zip(eu["groups"]["groups"]["group_id"], eu["groups"]["groups"]["status"], strict=True)) == SECOND_GROUPS
    expected_home = group_status(two_clusters)
    assert sorted(home["groups"]["groups"]["group_id"]) == sorted(expected_home["group_id"])
    assert "ERR" not in set(home["groups"]["groups"]["status"]), "prod-eu's ERR orders-app stays on prod-eu"
    assert set(eu["overview"]["gauges"]["broker"]) == {"7"}
    assert "7" not in set(home["overview"]["gauges"]["broker"])
    assert eu["topics"]["topics"].empty and not home["topics"]["topics"].empty
    assert eu["alerts"]["events"].empty and not home["alerts"]["events"].empty
    assert eu["pipeline"]["dead_counts"].empty and not home["pipeline"]["dead_counts"].empty
    scraped = eu["pipeline"]["scrape"]
    assert sorted(zip(scraped["source"], scraped["broker"].fillna(""), strict=True)) == [("admin", ""), ("jmx", "7")]
    # The Spark job serves every cluster: its progress shows whichever is picked.
    assert len(eu["pipeline"]["latest"]) == len(home["pipeline"]["latest"]) > 0


def test_the_all_clusters_loader_has_a_row_per_cluster_and_names_not_ok_groups_with_their_cluster(
    two_clusters: KnownLake,
) -> None:
    configured = [CLUSTER, SECOND_CLUSTER, QUIET_CLUSTER]
    data = cluster_queries.load(lake_of(two_clusters), scope(two_clusters, CLUSTER), configured)
    clusters = data["clusters"].set_index("cluster")
    assert list(clusters.index) == configured
    home = group_status(two_clusters)
    for status in STATUS_ORDER:
        assert clusters.loc[CLUSTER, status] == int((home["status"] == status).sum()), status
        assert clusters.loc[SECOND_CLUSTER, status] == sum(1 for s in SECOND_GROUPS.values() if s == status), status
        assert clusters.loc[QUIET_CLUSTER, status] == 0
    jmx_up = [r for r in two_clusters.rows["metrics_1m"] if r["metric"] == "up" and r["source"] == "jmx"]
    newest_up = {r["broker"]: r["last"] for r in sorted(jmx_up, key=lambda r: r["window_start"])}
    assert clusters.loc[CLUSTER, "brokers_up"] == f"{sum(v >= 1 for v in newest_up.values())} of {len(newest_up)}"
    assert (
        clusters.loc[CLUSTER, "targets_up"] == f"{sum(v >= 1 for v in newest_up.values()) + 1} of {len(newest_up) + 1}"
    )
    assert (clusters.loc[SECOND_CLUSTER, "brokers_up"], clusters.loc[SECOND_CLUSTER, "targets_up"]) == (
        "1 of 1",
        "1 of 2",
    )
    assert (clusters.loc[QUIET_CLUSTER, "brokers_up"], clusters.loc[QUIET_CLUSTER, "targets_up"]) == ("–", "–")
    assert 0 < clusters.loc[SECOND_CLUSTER, "data_age_s"] < 3600 and math.isnan(
        clusters.loc[QUIET_CLUSTER, "data_age_s"]
    )
    not_ok = data["not_ok"]
    expected = {(CLUSTER, g, s) for g, s in zip(home["group_id"], home["status"], strict=True) if s != "OK"}
    expected |= {(SECOND_CLUSTER, g, s) for g, s in SECOND_GROUPS.items() if s != "OK"}
    assert set(zip(not_ok["cluster"], not_ok["group_id"], not_ok["status"], strict=True)) == expected
    assert not_ok.iloc[0][["cluster", "group_id", "status"]].tolist() == [SECOND_CLUSTER, "orders-app", "ERR"]


def test_the_all_clusters_page_and_the_picker(two_clusters: KnownLake) -> None:
    at = open_page("clusters")
    assert at.sidebar.selectbox(key="cluster_pick").options == [CLUSTER, SECOND_CLUSTER, QUIET_CLUSTER]
    assert any("All clusters" in caption.value for caption in at.caption)
    clusters, not_ok = (frame.value for frame in at.dataframe)
    assert list(clusters["cluster"]) == [CLUSTER, SECOND_CLUSTER, QUIET_CLUSTER]
    assert list(clusters["newest_data"])[-1] == "none in the last hour"
    err = not_ok[not_ok["status"] == "ERR"]
    assert err[["cluster", "group_id", "total_lag"]].values.tolist() == [[SECOND_CLUSTER, "orders-app", "–"]]
    for frame in (clusters, not_ok):
        texts = frame.astype(str).to_numpy().ravel().tolist()
        assert not [text for text in texts if text in ("None", "nan", "NaT")], frame


def test_the_no_jmx_targets_hint_looks_at_the_picked_cluster(two_clusters: KnownLake) -> None:
    quiet = open_page("brokers", cluster=QUIET_CLUSTER)
    assert any(f"No JMX targets for cluster {QUIET_CLUSTER}" in info.value for info in quiet.info)
    home = open_page("overview", cluster=CLUSTER)
    assert not [info.value for info in home.info if "No JMX targets" in info.value], "test-cluster has a target"


def test_the_picker_scopes_a_page_to_one_cluster(two_clusters: KnownLake) -> None:
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    at.switch_page("views/groups.py").run()
    assert at.query_params["cluster"] == CLUSTER
    at.sidebar.selectbox(key="cluster_pick").select(SECOND_CLUSTER).run()
    assert at.query_params["cluster"] == SECOND_CLUSTER
    groups = pd.concat([frame.value for frame in at.dataframe if "group_id" in frame.value.columns])
    assert set(groups["group_id"]) == set(SECOND_GROUPS)
