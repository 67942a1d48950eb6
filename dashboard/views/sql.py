"""SQL: ad-hoc read-only DuckDB queries over the lake's views, with downloads and a quick chart."""

from __future__ import annotations

import io

import pandas as pd
import streamlit as st

from dashboard import charts, state, ui
from lagwatch import sql_guard

#: `{cluster}` in an example becomes the picked cluster, as an SQL string literal.
EXAMPLES = {
    "Groups, worst lag first": (
        "SELECT group_id, status, reason, total_lag, max_time_lag_s, updated_at\nFROM group_status\n"
        "WHERE cluster = {cluster}\n"
        "QUALIFY row_number() OVER (PARTITION BY group_id ORDER BY updated_at DESC) = 1\n"
        "ORDER BY total_lag DESC\nLIMIT 20"
    ),
    "Groups not OK, every cluster": (
        "SELECT cluster, group_id, status, reason, updated_at\nFROM group_status\n"
        "WHERE updated_at >= now() - INTERVAL 1 HOUR\n"
        "QUALIFY row_number() OVER (PARTITION BY cluster, group_id ORDER BY updated_at DESC) = 1 AND status <> 'OK'\n"
        "ORDER BY cluster, group_id"
    ),
    "Total lag per minute, last hour": (
        "SELECT window_start, sum(lag) AS lag\nFROM lag_1m\n"
        "WHERE cluster = {cluster} AND window_start >= now() - INTERVAL 1 HOUR\nGROUP BY window_start\n"
        "ORDER BY window_start"
    ),
    "Broker message rates, last hour": (
        "SELECT window_start, broker, rate_per_s\nFROM metrics_1m\n"
        "WHERE cluster = {cluster} AND metric = 'messages_in_total' AND topic IS NULL\n"
        "  AND window_start >= now() - INTERVAL 1 HOUR\nORDER BY window_start"
    ),
    "Spark batches": "SELECT * FROM pipeline_progress ORDER BY ts DESC LIMIT 50",
    "Dead letters by error": "SELECT error, count(*) AS records FROM dead_letters GROUP BY error ORDER BY records DESC",
    "Tables and views": "SHOW TABLES",
}


def example(name: str, cluster: str) -> str:
    """The example's text for the picked cluster (quoted as an SQL string literal)."""
    literal = "'" + cluster.replace("'", "''") + "'"
    return EXAMPLES[name].replace("{cluster}", literal)


def _use_example() -> None:
    st.session_state["sql_text"] = example(st.session_state["sql_example"], ui.scope().cluster)


def downloads(frame: pd.DataFrame) -> None:
    parquet = io.BytesIO()
    frame.to_parquet(parquet, index=False)
    left, right = st.columns(2)
    left.download_button("Download CSV", frame.to_csv(index=False), "lagwatch-query.csv", "text/csv")
    right.download_button(
        "Download Parquet", parquet.getvalue(), "lagwatch-query.parquet", "application/vnd.apache.parquet"
    )


def quick_chart(frame: pd.DataFrame) -> None:
    numeric = [c for c in frame.columns if pd.api.types.is_numeric_dtype(frame[c])]
    if not numeric or len(frame.columns) < 2:
        st.caption("Quick chart: the result needs a numeric column and one more column.")
        return
    columns = st.columns(3)
    x = columns[0].selectbox("x", list(frame.columns), key="chart_x")
    y = columns[1].selectbox("y", [c for c in numeric if c != x] or numeric, key="chart_y")
    kind = columns[2].selectbox("chart", ["line", "bar", "scatter"], key="chart_kind")
    ui.chart(charts.quick_chart(frame, x, y, kind, state.viewer_zone()), "sql_chart")


def render() -> None:
    ctx = ui.context()
    cluster = ui.scope().cluster
    st.caption(
        "Read-only: one SELECT (or WITH … SELECT, DESCRIBE, SHOW, SUMMARIZE, EXPLAIN) over the views "
        f"{', '.join(['metrics_10s', 'metrics_1m', 'lag_1m', 'group_status', 'alert_events'])}, … "
        "Times are stored in UTC. The examples read the picked cluster "
        f"(**{cluster}**, column `cluster`); your own SQL reads what it names."
    )
    granted = ui.access()
    ui.read_only_note(granted, "running SQL")
    st.selectbox("Example queries", list(EXAMPLES), key="sql_example", on_change=_use_example, index=None)
    sql = st.text_area("SQL", key="sql_text", height=160, placeholder=example("Groups, worst lag first", cluster))
    clicked = st.button("Run", type="primary", disabled=not granted.can_act)
    if clicked and sql.strip() and not ui.refused(granted, "running SQL"):
        try:
            st.session_state["sql_result"] = sql_guard.run_readonly(ctx.lake.path, ctx.lake.duckdb_path, sql)
            st.session_state.pop("sql_error", None)
        except sql_guard.SqlRefused as exc:
            st.session_state["sql_error"] = str(exc)
            st.session_state.pop("sql_result", None)
    if "sql_error" in st.session_state:
        st.error(st.session_state["sql_error"])
        return
    result = st.session_state.get("sql_result")
    if result is None:
        return
    st.caption(f"{len(result.frame):,} row(s)" + (f" (first {sql_guard.MAX_ROWS:,} shown)" if result.truncated else ""))
    ui.table(result.frame)
    downloads(result.frame)
    quick_chart(result.frame)


st.title("SQL")
render()
