"""Topics: in/out rates, partitions, end-offset growth, and who consumes each topic."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from dashboard import charts, state, ui
from dashboard.queries import Frames, Scope
from dashboard.queries import topics as topic_queries


def topic_table(frame: pd.DataFrame) -> None:
    tiles = st.columns(4)
    tiles[0].metric("Topics", ui.number(len(frame)))
    tiles[1].metric("Partitions", ui.number(frame["partitions"].sum()))
    tiles[2].metric("Appended in range (messages)", ui.number(frame["growth"].sum()))
    tiles[3].metric("Messages in (messages/s)", ui.number(frame["messages_in_total"].sum()))
    ui.table(frame, **topic_columns())


def topic_columns() -> dict[str, Any]:
    """Column labels with units for the topic table."""
    number = st.column_config.NumberColumn
    return {
        "partitions": number("partitions"),
        "end_offset": number("end offset (sum)"),
        "growth": number("appended in range (messages)"),
        "messages_in_total": number("in (messages/s)", format="%.1f"),
        "bytes_in_total": number("in (bytes/s)", format="%.0f"),
        "bytes_out_total": number("out (bytes/s)", format="%.0f"),
    }


def topic_charts(detail: Frames, topic: str) -> None:
    zone = state.viewer_zone()
    left, right = st.columns(2)
    with left:
        if detail["rate_series"].empty:
            ui.empty("No per-topic rates for this topic (needs broker JMX with per-topic meters).")
        else:
            messages, byte_rates = charts.rates_by_metric(detail["rate_series"], zone, topic)
            ui.chart(messages, "topic_messages")
            ui.chart(byte_rates, "topic_bytes")
    with right:
        if detail["offset_series"].empty:
            ui.empty("No log-end offsets for this topic in this range.")
        else:
            fig = charts.time_series(
                detail["offset_series"],
                zone,
                y="end_offset",
                y_title="offset (messages)",
                title="End offset (sum)",
                zero_baseline=False,
            )
            ui.chart(fig, "topic_offsets")


def render(ctx: ui.AppContext, scope: Scope) -> None:
    data = topic_queries.load(ctx.lake, scope)
    if data["topics"].empty:
        ui.empty(
            "No topics in this range: the admin collector reports log-end offsets; check "
            "`collect.topics_allow` / `topics_deny` in config.toml and that `lagwatch collect` is running."
        )
        return
    topic_table(data["topics"])
    topic = state.selected("topic", data["topics"]["topic"].tolist(), "Topic")
    if topic is None:
        return
    st.subheader(f"Topic {topic}")
    detail = topic_queries.detail(ctx.lake, scope, topic)
    topic_charts(detail, topic)
    st.markdown("**Consuming groups**")
    consumers = detail["groups"]
    if consumers.empty:
        ui.empty("No consumer group committed offsets for this topic in the last 10 minutes of the range.")
    else:
        ui.table(ui.with_time_lag_text(consumers), **ui.group_columns())


st.title("Topics")
ui.lake_page(render)
