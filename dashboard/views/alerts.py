"""Alerts: what fires now, the event history, and silences (through the alert engine)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from dashboard import queries, ui
from lagwatch import alert_state
from lagwatch import silences as silence_store
from lagwatch.config import ConfigError

#: The alert_events counts shown above the tables.
COUNTED_EVENTS = (alert_state.FIRING, alert_state.RESOLVED, alert_state.DELIVERED, alert_state.FAILED)


def event_counts(events: pd.DataFrame) -> None:
    counts = events["event"].value_counts()
    columns = st.columns(4)
    for column, event in zip(columns, COUNTED_EVENTS, strict=True):
        column.metric(f"{event.capitalize()} events", ui.number(int(counts.get(event, 0))))


def _matchers(text: str) -> dict[str, str]:
    pairs = [line.split("=", 1) for line in text.splitlines() if "=" in line]
    return {key.strip(): value.strip() for key, value in pairs if key.strip()}


def _silence_frame(rows: list[dict[str, object]]) -> pd.DataFrame:
    frame = pd.DataFrame(rows)
    for column in ("starts_at", "ends_at"):
        if column in frame.columns:
            frame[column] = pd.to_datetime(frame[column], unit="s", utc=True)
    if "matchers" in frame.columns:
        frame["matchers"] = [", ".join(f"{k}={v}" for k, v in m.items()) for m in frame["matchers"]]
    return frame


def silences(ctx: ui.AppContext) -> None:
    current = _silence_frame(silence_store.list_silences(ctx.config))
    active = current[current["active"]] if "active" in current.columns else current
    st.metric("Active silences", ui.number(len(active)))
    if current.empty:
        st.caption("No silences.")
    else:
        ui.table(current)
    with st.form("new_silence"):
        matchers = st.text_area("Matchers (one label=value per line; ~regex allowed)", "alertname=ConsumerLagHigh")
        hours = st.number_input("Duration (hours)", min_value=0.25, max_value=168.0, value=2.0, step=0.25)
        comment = st.text_input("Comment")
        author = st.text_input("Created by")
        if st.form_submit_button("Create silence"):
            try:
                silence_store.create_silence(ctx.config, _matchers(matchers), float(hours) * 3600, author, comment)
            except ConfigError as exc:
                st.error(f"Silence not created: {exc}")
            else:
                st.rerun()
    if len(active) and "id" in active.columns:
        chosen = st.selectbox("Expire silence", active["id"].tolist(), key="expire_pick")
        if st.button("Expire"):
            silence_store.expire_silence(ctx.config, chosen)
            st.rerun()


def render(ctx: ui.AppContext, scope: queries.Scope) -> None:
    data = queries.alerts(ctx.lake, scope)
    st.subheader("Firing now")
    if data["firing"].empty:
        st.success("No alerts firing.")
    else:
        ui.alert_table(data["firing"])
    st.subheader("History")
    if data["events"].empty:
        ui.empty(
            "No alert events in this range. Rules live in config.toml (`[[alerts.rules]]`); the engine runs "
            "beside the dashboard (`dashboard.run_alerts`) or as `lagwatch alerts`."
        )
    else:
        event_counts(data["events"])
        ui.alert_table(data["events"])


st.title("Alerts")
ui.lake_page(render)
st.subheader("Silences")
silences(ui.context())
