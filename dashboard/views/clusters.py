"""All clusters: every monitored cluster on one screen, and the groups of any of them that are not OK.

Why a page of its own: the other pages show the cluster the picker names, which hides a cluster
in trouble while another is picked. This one ignores the picker (the time range still applies):
one row per cluster (configured ones first, then any other in the lake) with its groups by
status, its brokers and scrape targets up and the age of its newest data, then every not-OK
group named with its cluster.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from dashboard import ui
from dashboard.queries import Scope
from dashboard.queries import clusters as cluster_queries
from lagwatch.vocabulary import STATUS_ORDER


def newest_data(age_s: float) -> str:
    """'12s ago', or what it means that a cluster has no recent data."""
    return "none in the last hour" if pd.isna(age_s) else f"{ui.duration(age_s)} ago"


def cluster_table(clusters: pd.DataFrame) -> None:
    shown = clusters.assign(newest_data=[newest_data(age) for age in clusters["data_age_s"]])
    number = st.column_config.NumberColumn
    ui.table(
        shown.drop(columns="data_age_s"),
        **{status: number(status, help=f"groups whose newest status is {status}") for status in STATUS_ORDER},
        brokers_up=st.column_config.TextColumn("brokers up", help="JMX targets whose newest scrape answered"),
        targets_up=st.column_config.TextColumn("targets up", help="every scrape target, the admin collector too"),
        newest_data=st.column_config.TextColumn("newest data"),
    )


def not_ok_groups(groups: pd.DataFrame, clusters: pd.DataFrame) -> None:
    if groups.empty:
        if int(clusters[list(STATUS_ORDER)].to_numpy().sum()) == 0:
            ui.empty(
                "No consumer groups in this range on any cluster: are `lagwatch collect` and `lagwatch stream` running?"
            )
        else:
            st.success("Every group of every cluster is OK.")
        return
    shown = groups.assign(total_lag=[ui.number(value) for value in groups["total_lag"]])
    ui.table(
        shown[["cluster", "group_id", "status", "total_lag", "reason", "updated_at"]],
        total_lag=st.column_config.TextColumn("total lag (messages)", help="– when not known (ERR)"),
    )


def render(ctx: ui.AppContext, scope: Scope) -> None:
    data = cluster_queries.load(ctx.lake, scope, [cluster.name for cluster in ctx.config.clusters])
    st.subheader("Clusters")
    cluster_table(data["clusters"])
    st.subheader("Groups not OK, every cluster")
    not_ok_groups(data["not_ok"], data["clusters"])


st.title("All clusters")
ui.lake_page(render, every_cluster=True)
