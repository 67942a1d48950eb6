"""Alerts: what fires now, the event history, silences, and backtesting a rule over the lake.

The backtest runs `lagwatch alerts backtest --format json` as a child process (the dashboard
never imports the alert engine) and reads its report (`lagwatch.backtest_report`); its stderr
carries progress lines for the bar, and Cancel ends the child.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from dashboard import charts, state, ui
from dashboard.queries import Scope
from dashboard.queries import alerts as alert_queries
from dashboard.queries import backtest as backtest_queries
from lagwatch import alert_state
from lagwatch import backtest_report as reports
from lagwatch import silences as silence_store
from lagwatch.command_line import lagwatch_command
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
    granted = ui.access()
    ui.read_only_note(granted, "creating or expiring silences")
    locked = not granted.can_act
    with st.form("new_silence"):
        matchers = st.text_area(
            "Matchers (one label=value per line; ~regex allowed)", "alertname=ConsumerLagHigh", disabled=locked
        )
        hours = st.number_input(
            "Duration (hours)", min_value=0.25, max_value=168.0, value=2.0, step=0.25, disabled=locked
        )
        comment = st.text_input("Comment", disabled=locked)
        # A logged-in user is the author; the field is for the anonymous (auth = "none") dashboard.
        author = granted.user or st.text_input("Created by", disabled=locked)
        if st.form_submit_button("Create silence", disabled=locked) and not ui.refused(granted, "creating a silence"):
            try:
                silence_store.create_silence(ctx.config, _matchers(matchers), float(hours) * 3600, author, comment)
            except ConfigError as exc:
                st.error(f"Silence not created: {exc}")
            else:
                st.rerun()
    if len(active) and "id" in active.columns:
        chosen = st.selectbox("Expire silence", active["id"].tolist(), key="expire_pick", disabled=locked)
        if st.button("Expire", disabled=locked) and not ui.refused(granted, "expiring a silence"):
            silence_store.expire_silence(ctx.config, chosen)
            st.rerun()


def render(ctx: ui.AppContext, scope: Scope) -> None:
    data = alert_queries.load(ctx.lake, scope)
    st.subheader("Firing now")
    if data["firing"].empty:
        st.success("No alerts firing.")
    else:
        ui.alert_table(data["firing"])
    st.subheader("History")
    if data["events"].empty:
        ui.empty(
            "No alert events in this range. Rules live in config.toml (`[[alerts.rules]]`); the engine runs "
            "beside the dashboard (`[alerts] run`) or as `lagwatch alerts`."
        )
    else:
        event_counts(data["events"])
        ui.alert_table(data["events"])


def _cli(ctx: ui.AppContext, *args: str) -> list[str]:
    return lagwatch_command(ctx.config, "alerts", "backtest", *args)


@st.cache_data(show_spinner=False, ttl=300)
def _rules(command: tuple[str, ...]) -> list[dict[str, Any]]:
    """The rules a backtest can replay (configured and default), from `--list-rules`."""
    done = subprocess.run(list(command), capture_output=True, text=True, timeout=60)
    return json.loads(done.stdout) if done.returncode == 0 else []


def _start_backtest(ctx: ui.AppContext, name: str, rule_text: str, scope: Scope) -> None:
    work = Path(tempfile.mkdtemp(prefix="lagwatch-backtest-"))
    (work / "rules.toml").write_text(rule_text, encoding="utf-8")
    command = _cli(ctx, "--rules", str(work / "rules.toml"), "--rule", name, "--format", "json",
                   "--from", scope.start.isoformat(), "--to", scope.end.isoformat())  # fmt: skip
    if scope.cluster in [cluster.name for cluster in ctx.config.clusters]:
        command += ["--cluster", scope.cluster]  # the picked cluster, as the page's chart of the rule's series
    with open(work / "out.json", "wb") as out, open(work / "err.log", "wb") as err:
        process = subprocess.Popen(command, stdout=out, stderr=err, start_new_session=True)
    st.session_state["backtest"] = {"process": process, "work": work, "rule": name, "toml": rule_text,
                                    "scope": scope}  # fmt: skip
    st.session_state.pop("backtest_result", None)


def _progress(work: Path) -> float:
    lines = (work / "err.log").read_text(encoding="utf-8", errors="replace").splitlines()
    found = [p for p in (reports.progress_of(line) for line in lines) if p is not None]
    return found[-1] if found else 0.0


def _running() -> None:
    """Progress of the child while it runs; its report (or its error) once it ends."""
    job = st.session_state.get("backtest")
    if not job:
        return
    process: subprocess.Popen[bytes] = job["process"]
    if process.poll() is None:
        st.progress(_progress(job["work"]), text=f"Backtesting {job['rule']}…")
        if st.button("Cancel backtest"):
            process.terminate()
            process.wait(10)
            st.session_state.pop("backtest")
            st.rerun()
        return
    st.session_state.pop("backtest")
    if process.returncode == 0:
        st.session_state["backtest_result"] = {**job, "report": (job["work"] / "out.json").read_text()}
    else:
        error = (job["work"] / "err.log").read_text(errors="replace").strip().splitlines()
        st.session_state["backtest_error"] = "\n".join(line for line in error if "backtest progress" not in line)
    st.rerun()


def _show_result(ctx: ui.AppContext, result: dict[str, Any]) -> None:
    report = reports.from_json(result["report"])
    assert isinstance(report, reports.Report)
    [rule] = report.rules
    zone = state.viewer_zone()
    totals = rule.totals
    columns = st.columns(4)
    columns[0].metric("Would-be alerts", ui.number(totals["alerts"]))
    columns[1].metric("Notifications", ui.number(totals["notifications"]))
    columns[2].metric("Time firing", ui.duration(totals["firing_s"]))
    columns[3].metric("Evaluations", ui.number(report.steps))
    label_sets = [a.labels for a in rule.alerts]
    series = backtest_queries.series(ctx.lake, result["scope"], rule.reads, label_sets)
    alerts = pd.DataFrame(
        [{"starts_at": a.starts_at, "ends_at": a.ends_at or report.until} for a in rule.alerts],
        columns=["starts_at", "ends_at"],
    )
    sent = pd.DataFrame(
        [{"time": pd.Timestamp(n.sent_at, unit="s", tz="UTC"), "receiver": n.receiver, "kind": n.kind}
         for n in rule.notifications],
        columns=["time", "receiver", "kind"],
    )  # fmt: skip
    reads = rule.reads
    y_title = reads["metric"] if reads["column"] in ("status", "count") else f"{reads['metric'] or reads['column']}"
    title = f"{rule.name}: {totals['alerts']} alerts, {totals['notifications']} notifications"
    ui.chart(charts.backtest_timeline(series, alerts, sent, zone, y_title=y_title, title=title), "backtest_timeline")
    if rule.alerts:
        ui.table(
            pd.DataFrame(
                [{"starts": pd.Timestamp(a.starts_at, unit="s", tz="UTC"),
                  "ends": pd.Timestamp(a.ends_at, unit="s", tz="UTC") if a.ends_at else None,
                  "labels": ", ".join(f"{k}={v}" for k, v in a.labels.items() if k != "alertname"),
                  "muted by": a.suppressed.split(" {")[0]} for a in rule.alerts]
            )
        )  # fmt: skip
    changes = pd.DataFrame(
        [{"group_id": c.group_id, "status": f"{c.previous}→{c.status}", "at": pd.Timestamp(c.at, unit="s", tz="UTC"),
          "notified after": ui.duration(c.delays.get(rule.name)) if c.delays.get(rule.name) is not None else "never"}
         for c in report.status_changes if rule.name in c.delays]
    )  # fmt: skip
    st.caption("Detection delay per status change (a group going STALL or worse)")
    if changes.empty:
        st.caption("No status change in this range for this rule to detect.")
    else:
        ui.table(ui.local_frame(changes))
    st.caption("The rule as backtested, for config.toml:")
    st.code(result["toml"], language="toml")


def backtest(ctx: ui.AppContext) -> None:
    rules = _rules(tuple(_cli(ctx, "--list-rules", "--format", "json")))
    if not rules:
        st.caption("No rules to backtest (or `lagwatch alerts backtest --list-rules` failed).")
        return
    names = [r["name"] for r in rules]
    name = st.selectbox("Rule", names, key="backtest_rule")
    chosen = next(r for r in rules if r["name"] == name)
    text = st.text_area("Rule (edit a copy; validated as config.toml is)", reports.rule_toml(chosen),
                        height=220, key=f"backtest_toml_{name}")  # fmt: skip
    scope = ui.scope()
    st.caption(f"Range: the page's range, {scope.start:%Y-%m-%d %H:%M} → {scope.end:%Y-%m-%d %H:%M} UTC.")
    granted = ui.access()
    ui.read_only_note(granted, "running a backtest")
    busy = "backtest" in st.session_state
    if st.button("Run backtest", disabled=busy or not granted.can_act) and not ui.refused(granted, "a backtest"):
        st.session_state.pop("backtest_error", None)
        _start_backtest(ctx, name, text, scope)
    if "backtest" in st.session_state:
        st.fragment(run_every=1.0)(_running)()
    if "backtest_error" in st.session_state:
        st.error(f"Backtest failed: {st.session_state['backtest_error']}")
    if "backtest_result" in st.session_state:
        _show_result(ctx, st.session_state["backtest_result"])


st.title("Alerts")
ui.lake_page(render)
st.subheader("Silences")
silences(ui.context())
st.subheader("Backtest")
backtest(ui.context())
