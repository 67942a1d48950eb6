"""Consumer groups: every group's status, lag and rates; a drill-down per group."""

from __future__ import annotations

import datetime as dt

import pandas as pd
import streamlit as st

from dashboard import charts, state, ui
from dashboard.queries import Frames, Scope
from dashboard.queries import groups as group_queries

HISTORY_RANGES = {"1h": dt.timedelta(hours=1), "6h": dt.timedelta(hours=6), "24h": dt.timedelta(hours=24)}
HISTORY_RANGES["7d"] = dt.timedelta(days=7)
#: Numbers before the long reason text, so a narrow screen cuts the text, not the lag.
TABLE_COLUMNS = [
    "group_id",
    "status",
    "total_lag",
    "max_lag",
    "max_time_lag_s",
    "max_time_lag_method",
    "consume_rate",
    "produce_rate",
    "eta_s",
    "rate_span_s",
    "reason",
    "partitions",
    "topics",
    "group_state",
    "group_type",
    "members",
    "rebalances",
    "rebalancing_s",
    "updated_at",
]
NOT_CATCHING_UP = "not catching up"
OWNER_COLUMNS = [
    "topic",
    "partition",
    "lag",
    "status",
    "retention_margin",
    "retention_margin_s",
    "owner_client_id",
    "owner_host",
    "owner_member_id",
    "owner_changes",
    "owner_pending",
]


def filtered(groups: pd.DataFrame) -> pd.DataFrame:
    """Search by group id (plain substring, case-insensitive), status and group type (classic,
    consumer for KIP-848 groups, share, …)."""
    left, middle, right = st.columns([2, 1, 1])
    needle = left.text_input("Search groups", key="group_search", placeholder="group id contains…")
    statuses = sorted(groups["status"].dropna().unique().tolist(), key=_status_rank)
    chosen = middle.multiselect("Status", statuses, key="group_status_filter")
    types = sorted(groups["group_type"].dropna().unique().tolist())
    chosen_types = right.multiselect("Group type", types, key="group_type_filter")
    shown = groups
    if needle:
        shown = shown[shown["group_id"].str.contains(needle, case=False, regex=False, na=False)]
    if chosen:
        shown = shown[shown["status"].isin(chosen)]
    if chosen_types:
        shown = shown[shown["group_type"].isin(chosen_types)]
    return shown


def _status_rank(status: str) -> int:
    """Worst first; an unknown status last."""
    order = charts.STATUSES_WORST_FIRST
    return order.index(status) if status in order else len(order)


def group_table(groups: pd.DataFrame) -> None:
    ranked = groups.assign(_rank=groups["status"].map(_status_rank))
    ranked = ranked.sort_values(["_rank", "total_lag"], ascending=[True, False])
    ui.table(ui.with_time_lag_text(ranked[TABLE_COLUMNS]), **ui.group_columns())
    st.caption(ui.TIME_LAG_CAPTION)


def drill_down(ctx: ui.AppContext, scope: Scope, groups: pd.DataFrame) -> None:
    by_lag = groups.sort_values("total_lag", ascending=False)["group_id"].tolist()
    group = state.selected("group", by_lag, "Group")
    if group is None:
        return
    preset = st.query_params.get("range", "1h")
    span = st.segmented_control(
        "History", list(HISTORY_RANGES), default=preset if preset in HISTORY_RANGES else "1h", key="group_history"
    )
    span = span or "1h"
    detail_scope = Scope(scope.cluster, scope.end - HISTORY_RANGES[span], scope.end)
    detail = group_queries.detail(ctx.lake, detail_scope, group)
    row = groups[groups["group_id"] == group].iloc[0]
    ui.tiles(
        [
            ("Status", str(row["status"]), None),
            ("Total lag (messages)", ui.number(row["total_lag"]), None),
            ("Time lag", ui.time_lag_text(row["max_time_lag_s"], row["max_time_lag_method"]), ui.TIME_LAG_HELP),
            ("Time to catch up", catch_up(row["eta_s"], row["total_lag"]), "lag / (consume − produce rate)"),
            ("Partitions", ui.number(row["partitions"]), None),
            ("Members", ui.number(row["members"]) if not pd.isna(row["members"]) else "not described", None),
            ("Rebalances", ui.number(row["rebalances"]), "rebalances in the lag window ([lag] window_s): every one "
             "the commit log recorded; without it, collector cycles that saw a rebalance, a member count change or "
             "a partition changing owner"),
            ("Time rebalancing", ui.duration(row["rebalancing_s"]), "seconds of the lag window the group spent "
             "rebalancing (PreparingRebalance, CompletingRebalance, Assigning, Reconciling)"),
        ]
    )  # fmt: skip
    group_state = "not described" if pd.isna(row["group_state"]) else row["group_state"]
    epoch = "" if pd.isna(row["group_epoch"]) else f" · group epoch: {int(row['group_epoch'])}"
    st.caption(f"Reason: {row['reason']} · group state: {group_state}{epoch} · {eta_basis(row['rate_span_s'])}")
    _owners(detail["owners"])
    _member_epochs(detail["member_epochs"], row["group_epoch"])
    _detail_charts(detail)


def catch_up(eta_s: float | None, total_lag: float | None) -> str:
    """The ETA tile: a NULL ETA with lag left means the group is not gaining on the producers."""
    if pd.isna(eta_s):
        return NOT_CATCHING_UP if not pd.isna(total_lag) and total_lag > 0 else "–"
    return ui.duration(eta_s)


def eta_basis(rate_span_s: float | None) -> str:
    """Where the ETA comes from, so a reader can judge how much to trust it."""
    if pd.isna(rate_span_s) or rate_span_s <= 0:
        return "time to catch up: no rates yet (one observation)"
    return f"time to catch up = lag / (consume − produce rate over the last {ui.duration(rate_span_s)})"


def _owners(owners: pd.DataFrame) -> None:
    """Who owns each partition, the most lagging first: the consumer to look at."""
    st.markdown("**Partitions and their owners** (newest minute; no owner: unassigned, or not described)")
    if owners.empty:
        ui.empty("No lag rows for this group in the last minutes.")
        return
    pending = st.column_config.TextColumn("assigned, not yet reconciled", help="KIP-848: the member that will own it")
    ui.table(owners[OWNER_COLUMNS], **ui.owner_columns(), owner_pending=pending)


def _member_epochs(epochs: pd.DataFrame, group_epoch: float | None) -> None:
    """A consumer (KIP-848) group's members and their epochs: one below the group epoch has not
    reconciled to the newest assignment yet. Classic groups have none: nothing shown."""
    if epochs.empty:
        return
    st.markdown("**Member epochs** (commit log, newest change; below the group epoch: still reconciling)")
    shown = epochs.assign(behind=None if pd.isna(group_epoch) else group_epoch - epochs["member_epoch"])
    number = st.column_config.NumberColumn
    ui.table(shown, member_epoch=number("member epoch", format="%d"), behind=number("epochs behind", format="%d"))


def _detail_charts(detail: Frames) -> None:
    zone = state.viewer_zone()
    if detail["history"].empty:
        ui.empty("No lag rows for this group in this history range.")
        return
    ui.chart(charts.lag_heatmap(detail["partition_lag"], zone), "group_heatmap")
    left, right = st.columns(2)
    history = detail["history"]
    with left:
        fig = charts.time_series(history, zone, y="lag", y_title="lag (messages)", title="Offset lag (sum)")
        ui.chart(fig, "group_lag")
    with right:
        fig = charts.time_series(history, zone, y="time_lag_s", y_title="time lag (s)", title="Time lag (max)")
        ui.chart(fig, "group_time_lag")
    left, right = st.columns(2)
    with left:
        if detail["status"].empty:
            ui.empty("No status rows for this group in this history range.")
        else:
            ui.chart(charts.status_timeline(detail["status"], zone), "group_status")
    with right:
        ui.chart(charts.consume_vs_produce(history, zone), "group_rates")


def render(ctx: ui.AppContext, scope: Scope) -> None:
    groups = group_queries.load(ctx.lake, scope)["groups"]
    if groups.empty:
        ui.empty(
            "No consumer groups in this range: check `collect.groups_allow` / `groups_deny` in config.toml and "
            "that `lagwatch collect` and `lagwatch stream` are running."
        )
        return
    shown = filtered(groups)
    st.caption(f"{len(shown)} of {len(groups)} groups")
    group_table(shown)
    st.subheader("Drill-down")
    drill_down(ctx, scope, groups)


st.title("Consumer groups")
ui.lake_page(render)
