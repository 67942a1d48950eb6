"""Plotly figure builders: units on every axis, times shown in the viewer's zone.

Stored times are UTC; each builder converts its time column to the viewer's zone only for
display and names that zone on the axis, so a wall screen in Berlin and an on-call laptop in
New York read the same moment differently but unambiguously.
"""

from __future__ import annotations

from zoneinfo import ZoneInfo

import pandas as pd
import plotly.express as px
import plotly.graph_objects as go

from lagwatch.vocabulary import STATUS_ORDER

#: Status colours: the same everywhere so a glance reads the same.
STATUS_COLOURS = {
    "LOSS": "#000000",
    "ERR": "#7f0000",
    "STOP": "#d62728",
    "REWIND": "#9467bd",
    "STALL": "#ff7f0e",
    "WARN": "#e6c229",
    "OK": "#2ca02c",
}
#: Worst first, as charts and tables list statuses.
STATUSES_WORST_FIRST = list(reversed(STATUS_ORDER))

METRIC_LABELS = {
    "messages_in_total": "messages in",
    "bytes_in_total": "bytes in",
    "bytes_out_total": "bytes out",
}


def local_times(frame: pd.DataFrame, zone: ZoneInfo, column: str = "time") -> pd.DataFrame:
    """A copy with `column` (UTC) converted to `zone` for display."""
    shown = frame.copy()
    shown[column] = pd.to_datetime(shown[column], utc=True).dt.tz_convert(str(zone))
    return shown


def _layout(fig: go.Figure, zone: ZoneInfo, y_title: str, title: str) -> go.Figure:
    fig.update_layout(
        title=title,
        xaxis_title=f"time ({zone})",
        yaxis_title=y_title,
        margin={"l": 10, "r": 10, "t": 40, "b": 10},
        height=320,
        legend_title_text="",
    )
    return fig


def time_series(
    frame: pd.DataFrame,
    zone: ZoneInfo,
    *,
    y: str,
    y_title: str,
    title: str,
    color: str | None = None,
    zero_baseline: bool = True,
) -> go.Figure:
    """Line chart over time; `y_title` carries the unit, e.g. 'messages/s'.

    The y axis starts at 0 so a line's height is its size: autoscaled, a flat 50 msg/s looked
    like a swing between 50.00 and 50.04. Positions (offsets) opt out with `zero_baseline=False`.
    """
    fig = px.line(local_times(frame, zone), x="time", y=y, color=color)
    if zero_baseline:
        fig.update_yaxes(rangemode="tozero")
    return _layout(fig, zone, y_title, title)


def rates_by_metric(frame: pd.DataFrame, zone: ZoneInfo, title: str) -> list[go.Figure]:
    """Message rate and byte rates on separate axes (messages/s vs bytes/s never share one)."""
    shown = frame.assign(series=frame["metric"].map(METRIC_LABELS).fillna(frame["metric"]))
    color = "broker" if "broker" in frame.columns else "series"
    if color == "broker":
        shown = shown.assign(broker=shown["broker"].astype(str))
    messages = shown[shown["metric"] == "messages_in_total"]
    byte_rates = shown[shown["metric"] != "messages_in_total"]
    if color == "broker":
        byte_rates = byte_rates.assign(broker=byte_rates["broker"] + " " + byte_rates["series"])
    return [
        time_series(messages, zone, y="rate_per_s", y_title="messages/s", title=f"{title}: messages in", color=color),
        time_series(byte_rates, zone, y="rate_per_s", y_title="bytes/s", title=f"{title}: bytes in/out", color=color),
    ]


def percent_series(frame: pd.DataFrame, zone: ZoneInfo, title: str) -> go.Figure:
    """Idle ratios: Kafka reports 0..1 for these 'percent' meters; shown as %."""
    scale = 100.0 if frame["value"].max() <= 1.0 else 1.0
    shown = frame.assign(value=frame["value"] * scale, broker=frame["broker"].astype(str))
    fig = time_series(shown, zone, y="value", y_title="idle (%)", title=title, color="broker")
    fig.update_yaxes(range=[0, 100])
    return fig


def elections(frame: pd.DataFrame, zone: ZoneInfo) -> go.Figure:
    """Election rate as lines, each window with elections as a marker (events on the time axis)."""
    shown = local_times(frame, zone).assign(broker=frame["broker"].astype(str))
    fig = px.line(shown, x="time", y="rate_per_s", color="broker")
    events = shown[shown["elections"] > 0]
    fig.add_trace(
        go.Scatter(
            x=events["time"],
            y=events["rate_per_s"],
            mode="markers",
            name="election events",
            marker={"symbol": "x", "size": 10, "color": "#d62728"},
            text=[
                f"broker {b}: {n:.0f} election(s)" for b, n in zip(events["broker"], events["elections"], strict=True)
            ],
        )
    )
    fig.update_yaxes(rangemode="tozero")
    return _layout(fig, zone, "elections/s", "Leader elections")


def lag_heatmap(frame: pd.DataFrame, zone: ZoneInfo) -> go.Figure:
    """Per-partition offset lag over time."""
    shown = local_times(frame, zone)
    grid = shown.pivot_table(index="topic_partition", columns="time", values="lag", aggfunc="max")
    fig = go.Figure(
        go.Heatmap(
            z=grid.to_numpy(),
            x=list(grid.columns),
            y=list(grid.index),
            colorscale="Reds",
            colorbar={"title": {"text": "lag (messages)"}},
        )
    )
    fig = _layout(fig, zone, "topic/partition", "Lag per partition")
    fig.update_layout(height=max(320, 18 * len(grid.index) + 120))
    return fig


def status_timeline(frame: pd.DataFrame, zone: ZoneInfo) -> go.Figure:
    """Group status over time, one row per status, worst on top."""
    shown = local_times(frame, zone)
    fig = px.scatter(
        shown,
        x="time",
        y="status",
        color="status",
        color_discrete_map=STATUS_COLOURS,
        category_orders={"status": STATUSES_WORST_FIRST},
        hover_data=["reason", "total_lag"],
    )
    fig.update_traces(marker={"symbol": "square", "size": 9})
    return _layout(fig, zone, "status", "Status timeline")


def consume_vs_produce(frame: pd.DataFrame, zone: ZoneInfo) -> go.Figure:
    named = frame.rename(columns={"consume_rate": "consumed", "produce_rate": "produced"})
    long = named.melt(id_vars="time", value_vars=["consumed", "produced"], var_name="rate", value_name="value")
    return time_series(long, zone, y="value", y_title="records/s", title="Consume vs produce rate", color="rate")


def quick_chart(frame: pd.DataFrame, x: str, y: str, kind: str, zone: ZoneInfo) -> go.Figure:
    """SQL page: a chart of any result; time-typed x is shown in the viewer's zone."""
    shown = frame.copy()
    x_title = x
    if isinstance(shown[x].dtype, pd.DatetimeTZDtype):
        shown[x] = shown[x].dt.tz_convert(str(zone))
        x_title = f"{x} ({zone})"
    builder = {"line": px.line, "bar": px.bar, "scatter": px.scatter}[kind]
    fig = builder(shown, x=x, y=y)
    fig.update_layout(xaxis_title=x_title, yaxis_title=f"{y} (as queried)", height=360)
    return fig


def backtest_timeline(
    series: pd.DataFrame, alerts: pd.DataFrame, notifications: pd.DataFrame, zone: ZoneInfo, *, y_title: str, title: str
) -> go.Figure:
    """The metric a rule reads, with its would-be alerts as shaded spans and notifications as marks.

    `series`: time, series, value; `alerts`: starts_at, ends_at, series; `notifications`: time, receiver, kind.
    """
    fig = px.line(local_times(series, zone), x="time", y="value", color="series") if len(series) else go.Figure()
    for alert in alerts.itertuples():
        start = pd.Timestamp(alert.starts_at, tz="UTC").tz_convert(str(zone))
        end = pd.Timestamp(alert.ends_at, tz="UTC").tz_convert(str(zone))
        fig.add_vrect(x0=start, x1=end, fillcolor=STATUS_COLOURS["STOP"], opacity=0.15, line_width=0)
    if len(notifications):
        shown = local_times(notifications, zone)
        fig.add_trace(
            go.Scatter(
                x=shown["time"],
                y=[0] * len(shown),
                mode="markers",
                marker={"symbol": "triangle-up", "size": 10, "color": "#1f77b4"},
                name="notifications",
                text=shown["receiver"] + " · " + shown["kind"],
                hoverinfo="text+x",
            )
        )
    return _layout(fig, zone, y_title, title)
