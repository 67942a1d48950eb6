"""Consumer groups: a page of groups at a time (status, lag, rates), filtered and ordered worst first
by the query; a drill-down per group."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Iterable
from typing import Any

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


#: Rows per page the reader can pick; the default is the queries' PAGE_SIZE.
PAGE_SIZES = [50, group_queries.PAGE_SIZE, 250, 500]


def chosen_filter() -> group_queries.GroupFilter:
    """The filters as the reader left them (their widgets' state), read before the query runs:
    the widgets are drawn after it, because their choices come from its answer."""
    value = st.session_state.get
    return group_queries.GroupFilter(
        search=str(value("group_search") or ""),
        statuses=tuple(value("group_status_filter") or ()),
        group_types=tuple(value("group_type_filter") or ()),
        topics=tuple(value("group_topic_filter") or ()),
    )


def requested_offset(chosen: group_queries.GroupFilter, size: int) -> int:
    """The first row of the page asked for; back to the first page when the filters or the page
    size changed (page 3 of another selection means nothing)."""
    seen = (chosen, size)
    if st.session_state.get("group_page_seen") != seen:
        st.session_state["group_page_seen"] = seen
        st.session_state["group_page"] = 1
    return (int(st.session_state.get("group_page") or 1) - 1) * size


def filters(summary: pd.Series) -> None:
    """Search by group id (plain substring, case-insensitive), status, group type (classic,
    consumer for KIP-848 groups, share, …) and topic consumed: the choices are the groups' own."""
    left, middle, right, far = st.columns([2, 1, 1, 2])
    left.text_input("Search groups", key="group_search", placeholder="group id contains…")
    middle.multiselect(
        "Status", _choices(summary["statuses"], "group_status_filter", _status_rank), key="group_status_filter"
    )
    right.multiselect("Group type", _choices(summary["group_types"], "group_type_filter"), key="group_type_filter")
    far.multiselect("Topic", _choices(summary["topic_names"], "group_topic_filter"), key="group_topic_filter")


def _choices(values: Iterable[Any], key: str, rank: Callable[[str], int] | None = None) -> list[str]:
    """The lake's values plus any still chosen (a group that left must not break the widget)."""
    present = {str(v) for v in values} | set(st.session_state.get(key) or ())
    return sorted(present, key=rank) if rank else sorted(present)


def pager(summary: pd.Series) -> None:
    """'groups 101–200 of 1,234' and the page number; the page shown is the one the query ran
    (pulled back to the last page when fewer groups match)."""
    matching, total, offset, size = (int(summary[k]) for k in ("matching", "groups", "offset", "size"))
    st.session_state["group_page"] = offset // size + 1
    pages = max(1, math.ceil(matching / size))
    left, middle, right = st.columns([1, 1, 4])
    left.number_input(f"Page (of {pages:,})", min_value=1, step=1, key="group_page")
    middle.selectbox("Rows per page", PAGE_SIZES, index=PAGE_SIZES.index(size), key="group_page_size")
    first, last = (offset + 1, min(offset + size, matching)) if matching else (0, 0)
    narrowed = f" matching ({total:,} in all)" if matching != total else ""
    right.caption(f"groups {first:,}–{last:,} of {matching:,}{narrowed}")


def _status_rank(status: str) -> int:
    """Worst first; an unknown status last."""
    order = charts.STATUSES_WORST_FIRST
    return order.index(status) if status in order else len(order)


def group_table(groups: pd.DataFrame) -> None:
    """One page of groups, worst first as the query ordered them."""
    ui.table(ui.with_time_lag_text(groups[TABLE_COLUMNS]), **ui.group_columns())
    st.caption(ui.TIME_LAG_CAPTION)


def drill_down(ctx: ui.AppContext, scope: Scope, groups: pd.DataFrame) -> None:
    """The group in the URL, else the page's group with most lag; the choices are the page's groups
    and the group in the URL (kept while the reader pages on)."""
    groups = with_linked_group(ctx, scope, groups)
    group = state.selected("group", group_queries.most_lag(groups), "Group")
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


def with_linked_group(ctx: ui.AppContext, scope: Scope, groups: pd.DataFrame) -> pd.DataFrame:
    """The page's groups plus the one the URL names when it is on another page (a pasted link
    opens that group's drill-down whatever the table shows)."""
    linked = st.query_params.get("group")
    if not linked or linked in set(groups["group_id"]):
        return groups
    row = group_queries.one(ctx.lake, scope, str(linked))
    if row.empty or groups.empty:
        return groups if row.empty else row
    return pd.concat([row, groups], ignore_index=True)


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
    chosen = chosen_filter()
    size = int(st.session_state.get("group_page_size") or group_queries.PAGE_SIZE)
    listing = group_queries.listing(ctx.lake, scope, chosen, requested_offset(chosen, size), size)
    summary = listing["summary"].iloc[0]
    if summary["groups"] == 0:
        ui.empty(
            "No consumer groups in this range: check `collect.groups_allow` / `groups_deny` in config.toml and "
            "that `lagwatch collect` and `lagwatch stream` are running."
        )
        return
    filters(summary)
    pager(summary)
    groups = listing["groups"]
    if groups.empty:
        ui.empty("No group matches these filters: clear the search or a filter to see more.")
    else:
        group_table(groups)
    st.subheader("Drill-down")
    drill_down(ctx, scope, groups)


st.title("Consumer groups")
ui.lake_page(render)
