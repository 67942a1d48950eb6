"""Brokers: rates, partition and leader balance, elections, thread idle, scrape health."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from dashboard import charts, state, ui
from dashboard.queries import Scope
from dashboard.queries import brokers as broker_queries

BALANCE_METRICS = ("up", "partition_count", "leader_count", "under_replicated_partitions")


def skew_percent(values: pd.Series) -> float | None:
    """How far the busiest broker is above the mean (0 % = perfectly balanced)."""
    mean = values.mean()
    return None if values.empty or not mean else float((values.max() / mean - 1) * 100)


def balance(gauges: pd.DataFrame) -> None:
    wide = gauges.pivot_table(index="broker", columns="metric", values="value", aggfunc="first")
    wide = wide.reindex(columns=list(BALANCE_METRICS)).reset_index()
    wide.columns.name = None
    columns = st.columns(3)
    columns[0].metric("Brokers reporting", ui.number(len(wide)))
    columns[1].metric("Partition skew", ui.number(skew_percent(wide["partition_count"].dropna()), "%"))
    columns[2].metric("Leader skew", ui.number(skew_percent(wide["leader_count"].dropna()), "%"))
    ui.table(
        wide,
        partition_count=st.column_config.NumberColumn("partitions"),
        leader_count=st.column_config.NumberColumn("leaders"),
        under_replicated_partitions=st.column_config.NumberColumn("under-replicated"),
    )


def rate_charts(frame: pd.DataFrame) -> None:
    if frame.empty:
        return
    messages, byte_rates = charts.rates_by_metric(frame, state.viewer_zone(), "Per broker")
    ui.chart(messages, "brokers_messages")
    ui.chart(byte_rates, "brokers_bytes")


def elections(frame: pd.DataFrame) -> None:
    if frame.empty:
        ui.empty("No leader-election metric (`leader_elections_total`) in this range.")
        return
    events = frame[frame["elections"] > 0]
    st.metric("Leader elections in range", ui.number(float(events["elections"].sum())))
    ui.chart(charts.elections(frame, state.viewer_zone()), "brokers_elections")
    if len(events):
        ui.table(events[["time", "broker", "elections"]])


def idle(frame: pd.DataFrame) -> None:
    if frame.empty:
        ui.empty("No request-handler / network-processor idle metrics in this range.")
        return
    zone = state.viewer_zone()
    left, right = st.columns(2)
    for column, metric, title in (
        (left, "request_handler_avg_idle_percent", "Request handler idle"),
        (right, "network_processor_avg_idle_percent", "Network processor idle"),
    ):
        rows = frame[frame["metric"] == metric]
        if len(rows):
            with column:
                ui.chart(charts.percent_series(rows, zone, title), f"brokers_{metric}")


def scrape_health(frame: pd.DataFrame) -> None:
    if frame.empty:
        ui.empty("No scrape results (`up`) in this range: is `lagwatch collect` running?")
        return
    ui.table(
        frame,
        up=st.column_config.NumberColumn("up (1 = ok)"),
        up_ratio_1h=st.column_config.ProgressColumn("up, last hour", min_value=0, max_value=1, format="percent"),
        scrape_duration_s=st.column_config.NumberColumn("scrape duration (s)", format="%.3f"),
    )


def render(ctx: ui.AppContext, scope: Scope) -> None:
    data = broker_queries.load(ctx.lake, scope)
    if data["gauges"].empty and data["rates"].empty:
        hint = ui.no_jmx_targets_hint(ctx, scope.cluster, "broker metrics")
        if hint is not None:
            ui.empty(hint)
        else:
            ui.empty("No broker metrics in this range: is `lagwatch collect` reaching the JMX targets?")
    else:
        st.subheader("Partition and leader balance")
        ui.simulated_brokers_note(data["gauges"]["broker"])
        balance(data["gauges"])
        st.subheader("Message and byte rates")
        rate_charts(data["rates"])
        st.subheader("Leader elections")
        elections(data["elections"])
        st.subheader("Thread idle")
        idle(data["idle"])
    st.subheader("Scrape health per target")
    scrape_health(data["scrape"])


st.title("Brokers")
ui.lake_page(render)
