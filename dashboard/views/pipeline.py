"""Pipeline: collector heartbeats, scrape targets, Spark progress, dead letters."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from dashboard import charts, state, ui
from dashboard.queries import Scope
from dashboard.queries import pipeline as pipeline_queries

#: A collector is silent when its last heartbeat is older than this many collect intervals.
SILENT_AFTER_INTERVALS = 3


def collectors(frame: pd.DataFrame, interval_s: float) -> None:
    if frame.empty:
        ui.empty("No collector heartbeats in this range: start `lagwatch collect` (or `lagwatch up`).")
        return
    wide = frame.pivot_table(index="collector", columns="metric", values="value", aggfunc="first")
    rates = frame[frame["metric"] == "collector_samples_produced_total"].set_index("collector")["rate_per_s"]
    seen = frame.groupby("collector")["last_seen"].max()
    wide = (
        wide.reindex(columns=list(pipeline_queries.HEARTBEAT_METRICS))
        .assign(produced_per_s=rates, last_seen=seen)
        .reset_index()
    )
    wide.columns.name = None
    age = (state.utc_now() - wide["last_seen"]).dt.total_seconds()
    wide["state"] = ["alive" if a <= SILENT_AFTER_INTERVALS * max(interval_s, 60) else "silent" for a in age]
    columns = st.columns(3)
    columns[0].metric("Collectors alive", ui.number(int((wide["state"] == "alive").sum())))
    columns[1].metric("Samples failed", ui.number(wide["collector_samples_failed_total"].sum()))
    columns[2].metric("Targets assigned", ui.number(wide["collector_targets_assigned"].sum()))
    ui.table(
        wide,
        collector_samples_produced_total=st.column_config.NumberColumn("produced"),
        collector_samples_delivered_total=st.column_config.NumberColumn("delivered"),
        collector_samples_failed_total=st.column_config.NumberColumn("failed"),
        collector_targets_assigned=st.column_config.NumberColumn("targets"),
        produced_per_s=st.column_config.NumberColumn("produced (samples/s)", format="%.1f"),
    )


def targets(frame: pd.DataFrame) -> None:
    if frame.empty:
        ui.empty("No scrape targets reported `up` in this range: are JMX targets configured and collectors running?")
        return
    columns = st.columns(2)
    columns[0].metric("Targets up", ui.number(int((frame["up"] >= 1).sum())))
    columns[1].metric("Targets down", ui.number(int((frame["up"] < 1).sum())))
    ui.table(frame, scrape_duration_s=st.column_config.NumberColumn("scrape duration (s)", format="%.3f"))


def spark(latest: pd.DataFrame, series: pd.DataFrame) -> None:
    if latest.empty and series.empty:
        ui.empty("The Spark job has not reported progress in this range: start `lagwatch stream`.")
        return
    if len(latest):
        ui.table(
            latest,
            input_rows_per_s=st.column_config.NumberColumn("input (rows/s)", format="%.0f"),
            processed_rows_per_s=st.column_config.NumberColumn("processed (rows/s)", format="%.0f"),
            batch_duration_ms=st.column_config.NumberColumn("batch (ms)"),
            freshness_s=st.column_config.NumberColumn("freshness (s)", format="%.1f"),
        )
    if series.empty:
        return
    zone = state.viewer_zone()
    left, middle, right = st.columns(3)
    for column, y, unit, title in (
        (left, "input_rows_per_s", "rows/s", "Input rows/s"),
        (middle, "batch_duration_ms", "batch duration (ms)", "Batch duration"),
        (right, "freshness_s", "freshness (s)", "Freshness (sample → lake)"),
    ):
        with column:
            ui.chart(charts.time_series(series, zone, y=y, y_title=unit, title=title, color="query"), f"spark_{y}")


def dead_letters(counts: pd.DataFrame, samples: pd.DataFrame) -> None:
    if counts.empty:
        st.success("No dead letters in this range.")
        return
    st.metric("Dead letters", ui.number(int(counts["records"].sum())))
    ui.table(counts)
    st.markdown("**Latest samples**")
    ui.table(samples)


def render(ctx: ui.AppContext, scope: Scope) -> None:
    data = pipeline_queries.load(ctx.lake, scope)
    st.subheader("Collectors")
    st.caption(
        "Collectors and the Spark job serve every cluster: these two sections are not limited to the picked one."
    )
    collectors(data["heartbeats"], ctx.config.collect.interval_s)
    st.subheader("Scrape targets")
    targets(data["scrape"])
    st.subheader("Spark job")
    spark(data["latest"], data["series"])
    st.subheader("Dead letters")
    dead_letters(data["dead_counts"], data["dead_samples"])


st.title("Pipeline")
ui.lake_page(render)
