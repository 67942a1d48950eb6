"""Overview: is the cluster healthy, which group is falling behind, is the pipeline fresh."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from dashboard import charts, state, ui
from dashboard.queries import Frames, Scope
from dashboard.queries import overview as overview_queries

HEALTH_TILES = (
    ("active_controller_count", "Active controllers"),
    ("under_replicated_partitions", "Under-replicated partitions"),
    ("offline_partitions", "Offline partitions"),
    ("under_min_isr_partitions", "Under-min-ISR partitions"),
)


def _gauge_sum(gauges: pd.DataFrame, metric: str) -> float | None:
    rows = gauges[gauges["metric"] == metric]
    return float(rows["value"].sum()) if len(rows) else None


def health_tiles(gauges: pd.DataFrame, ctx: ui.AppContext, cluster: str) -> None:
    up = gauges[gauges["metric"] == "up"]
    if gauges.empty:
        hint = ui.no_jmx_targets_hint(ctx, cluster, "broker health")
        if hint is not None:
            ui.empty(hint)
        else:
            ui.empty(
                "No broker metrics in the last 10 minutes of this range: is `lagwatch collect` running and "
                "reaching the JMX targets? The Pipeline page shows each scrape target."
            )
        return
    ui.tiles(
        [
            ("Brokers up", ui.number(int((up["value"] >= 1).sum())) if len(up) else "–", None),
            ("Brokers down", ui.number(int((up["value"] < 1).sum())) if len(up) else "–", None),
            *((label, ui.number(_gauge_sum(gauges, metric)), None) for metric, label in HEALTH_TILES),
        ]
    )
    ui.simulated_brokers_note(gauges["broker"])


def rates(frame: pd.DataFrame) -> None:
    if frame.empty:
        ui.empty("No broker message or byte rates in this range (needs broker JMX metrics).")
        return
    left, right = st.columns(2)
    messages, byte_rates = charts.rates_by_metric(frame, state.viewer_zone(), "Cluster")
    with left:
        ui.chart(messages, "overview_messages")
    with right:
        ui.chart(byte_rates, "overview_bytes")


def group_counts(counts: pd.DataFrame) -> None:
    """How many groups are in each status, the worst first: the fleet at a glance."""
    total = int(counts["groups"].sum())
    named = [status if isinstance(status, str) else "no status" for status in counts["status"]]
    parts = " · ".join(f"{ui.number(n)} {status}" for status, n in zip(named, counts["groups"], strict=True))
    st.caption(f"{ui.number(total)} groups: {parts}")


def worst_groups(data: Frames) -> None:
    if data["group_counts"].empty:
        ui.empty(
            "No consumer groups in this range: check `collect.groups_allow` in config.toml and that "
            "`lagwatch collect` and `lagwatch stream` are running."
        )
        return
    group_counts(data["group_counts"])
    # Half-width tables: the numbers come before the long reason so they are never cut off.
    columns = ["group_id", "status", "max_time_lag_s", "max_time_lag_method", "total_lag", "reason"]
    left, right = st.columns(2)
    with left:
        st.markdown("**Worst time lag**")
        ui.table(ui.with_time_lag_text(data["worst_time_lag"][columns]), **ui.group_columns())
    with right:
        st.markdown("**Worst offset lag**")
        ui.table(ui.with_time_lag_text(data["most_lag"][columns]), **ui.group_columns())
    st.caption(f"{ui.TIME_LAG_CAPTION} Worst time lag: a lagging group whose time lag is unknown first.")


def firing(alerts: pd.DataFrame) -> None:
    if alerts.empty:
        st.success("No alerts firing.")
        return
    st.error(f"{len(alerts)} alert(s) firing")
    ui.alert_table(alerts)


def freshness(progress: pd.DataFrame) -> None:
    if progress.empty:
        ui.empty("The Spark job reported no progress in the last 10 minutes: is `lagwatch stream` running?")
        return
    last = progress["ts"].max()
    columns = st.columns(3)
    columns[0].metric("Pipeline freshness", ui.duration(progress["freshness_s"].max()))
    columns[1].metric("Last batch", ui.duration((state.utc_now() - last).total_seconds()) + " ago")
    columns[2].metric("Input (rows/s)", ui.number(progress["input_rows_per_s"].sum()))


def render(ctx: ui.AppContext, scope: Scope) -> None:
    data = overview_queries.load(ctx.lake, scope)
    st.subheader("Cluster health")
    health_tiles(data["gauges"], ctx, scope.cluster)
    rates(data["cluster_rates"])
    st.subheader("Consumer groups")
    worst_groups(data)
    st.subheader("Alerts")
    firing(data["firing"])
    st.subheader("Pipeline")
    st.caption("The Spark job serves every cluster: its freshness is the same whichever cluster is picked.")
    freshness(data["pipeline"])


st.title("Overview")
ui.lake_page(render)
