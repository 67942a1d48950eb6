"""The view's state (time range, cluster, selected group or topic) lives in the URL.

Why the URL: an operator pastes a link into an incident channel and the reader sees the same
cluster over the same range, so `st.query_params` is the source of truth and the sidebar
widgets only edit it. Times are parsed and kept in UTC; only display converts to the viewer's
zone (`viewer_zone`).
"""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import streamlit as st

from dashboard.queries import Scope

PRESETS: dict[str, dt.timedelta] = {
    "15m": dt.timedelta(minutes=15),
    "1h": dt.timedelta(hours=1),
    "6h": dt.timedelta(hours=6),
    "24h": dt.timedelta(hours=24),
    "7d": dt.timedelta(days=7),
}
DEFAULT_RANGE = "1h"
CUSTOM = "custom"


def utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def viewer_zone() -> ZoneInfo:
    """The browser's zone when Streamlit knows it, else UTC (stored times are always UTC)."""
    name = getattr(st.context, "timezone", None)
    try:
        return ZoneInfo(name) if name else ZoneInfo("UTC")
    except (ZoneInfoNotFoundError, ValueError):
        return ZoneInfo("UTC")


def _param(name: str) -> str | None:
    value = st.query_params.get(name)
    return str(value) if value else None


def _parse_utc(text: str | None) -> dt.datetime | None:
    """ISO-8601 from the URL; a time without a zone is taken as UTC."""
    if not text:
        return None
    try:
        parsed = dt.datetime.fromisoformat(text)
    except ValueError:
        return None
    return parsed.replace(tzinfo=dt.UTC) if parsed.tzinfo is None else parsed.astimezone(dt.UTC)


def _iso(moment: dt.datetime) -> str:
    return moment.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def range_from_params(now: dt.datetime) -> tuple[str, dt.datetime, dt.datetime]:
    """(preset name or 'custom', start, end) from the URL; bad values fall back to the default."""
    preset = _param("range") or DEFAULT_RANGE
    if preset == CUSTOM:
        start, end = _parse_utc(_param("from")), _parse_utc(_param("to"))
        if start and end and start < end:
            return CUSTOM, start, end
        preset = DEFAULT_RANGE
    if preset not in PRESETS:
        preset = DEFAULT_RANGE
    return preset, now - PRESETS[preset], now


def sidebar_scope(clusters: list[str], default_cluster: str) -> Scope:
    """Draw the cluster selector and time-range picker; write the choice back to the URL."""
    options = clusters or [default_cluster]
    wanted = _param("cluster") or (default_cluster if default_cluster in options else options[0])
    cluster = st.sidebar.selectbox(
        "Cluster", options, index=options.index(wanted) if wanted in options else 0, key="cluster_pick"
    )
    preset, start, end = range_from_params(utc_now())
    choices = [*PRESETS, CUSTOM]
    picked = st.sidebar.selectbox("Time range", choices, index=choices.index(preset), key="range_pick")
    if picked == CUSTOM:
        start, end = _custom_inputs(start, end)
    else:
        start, end = utc_now() - PRESETS[picked], utc_now()
    _write_params(cluster, picked, start, end)
    return Scope(cluster=cluster, start=start, end=end)


def _custom_inputs(start: dt.datetime, end: dt.datetime) -> tuple[dt.datetime, dt.datetime]:
    start_text = st.sidebar.text_input("From (UTC, ISO-8601)", _iso(start), key="range_from")
    end_text = st.sidebar.text_input("To (UTC, ISO-8601)", _iso(end), key="range_to")
    parsed_start, parsed_end = _parse_utc(start_text), _parse_utc(end_text)
    if parsed_start is None or parsed_end is None or parsed_start >= parsed_end:
        st.sidebar.warning("Custom range: enter two ISO-8601 times, 'From' before 'To' (e.g. 2026-01-31T08:00Z).")
        return start, end
    return parsed_start, parsed_end


def _write_params(cluster: str, preset: str, start: dt.datetime, end: dt.datetime) -> None:
    wanted = {"cluster": cluster, "range": preset}
    if preset == CUSTOM:
        wanted |= {"from": _iso(start), "to": _iso(end)}
    for key, value in wanted.items():
        if st.query_params.get(key) != value:
            st.query_params[key] = value
    for stale in ("from", "to"):
        if preset != CUSTOM and stale in st.query_params:
            del st.query_params[stale]


def selected(name: str, options: list[str], label: str) -> str | None:
    """A page-level choice (group, topic) that also lives in the URL."""
    if not options:
        return None
    wanted = _param(name)
    index = options.index(wanted) if wanted in options else 0
    choice = st.selectbox(label, options, index=index, key=f"pick_{name}")
    if st.query_params.get(name) != choice:
        st.query_params[name] = choice
    return str(choice)
