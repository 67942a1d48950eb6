"""What every page shares: the loaded config and lake, the scope, empty states, tables.

Why here and not in each page: the rules that cut across pages (never a stack trace, times
in the viewer's zone, live refresh by fragment, an empty state that says how to fix it) are
easy to get wrong once in seven places.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeVar

import duckdb
import numpy as np
import pandas as pd
import streamlit as st

from dashboard import access as accesslib
from dashboard import state
from dashboard.queries import Lake, Scope
from dashboard.queries import clusters as cluster_queries
from lagwatch import lake as lakelib
from lagwatch.config import Config, ConfigError, load_config
from lagwatch.lake import TimeLagMethod

log = logging.getLogger(__name__)

P = ParamSpec("P")
R = TypeVar("R")

EMPTY_LAKE = (
    "The lake is empty: start `lagwatch stream` (the Spark job writes the lake) and `lagwatch collect` "
    "(the collectors feed it), or `lagwatch up` for the whole local stack."
)


@dataclass(frozen=True)
class AppContext:
    config: Config
    lake: Lake

    @property
    def refresh_s(self) -> float:
        return self.config.dashboard.refresh_s


@st.cache_resource(show_spinner=False)
def _load(env_path: str | None) -> AppContext:
    """Keyed by the config path so a process serving one config never mixes in another."""
    config = load_config()
    lake = Lake.from_config(config)
    # Rebuild the views file once per server: an older one may lack views or macros this
    # code reads. The swap is atomic, so open readers (and the pipeline) are unaffected.
    lakelib.write_views_file(lake.path, lake.duckdb_path)
    return AppContext(config=config, lake=lake)


def context() -> AppContext:
    """The config named by $LAGWATCH_CONFIG (set by `lagwatch dashboard`), loaded once per process."""
    import os

    from lagwatch.config import CONFIG_ENV_VAR

    try:
        return _load(os.environ.get(CONFIG_ENV_VAR))
    except ConfigError as exc:
        st.error(f"Lagwatch cannot start the dashboard: {exc}")
        st.stop()
        raise  # unreachable: st.stop() ends the run


def access() -> accesslib.Access:
    """This session's right to act, from its login (st.user) and [dashboard]; asked afresh on every run."""
    dashboard = context().config.dashboard
    claims = st.user.to_dict() if dashboard.auth == "oidc" else {}
    return accesslib.decide(claims, dashboard)


def read_only_note(granted: accesslib.Access, action: str) -> None:
    """One line where an action would be, saying why it is not offered to this user."""
    if not granted.can_act:
        st.info(f"Read-only: {action} is unavailable because {granted.reason}.", icon=":material/lock:")


def refused(granted: accesslib.Access, action: str) -> bool:
    """True (and said on the page, and logged) when this session may not do `action`.

    Called where the action happens, not only where its button is drawn: a disabled widget
    is a hint to the browser, this is the check.
    """
    if granted.can_act:
        return False
    log.warning("refused %s for %s: %s", action, granted.user or "an anonymous session", granted.reason)
    st.error(f"Refused: {action} needs an allowed user; {granted.reason}.")
    return True


def scope() -> Scope:
    """The scope in the URL, recomputed on every (fragment) run so 'last hour' keeps moving."""
    ctx = context()
    _, start, end = state.range_from_params(state.utc_now())
    cluster = st.query_params.get("cluster") or ctx.config.cluster.name
    return Scope(cluster=str(cluster), start=start, end=end)


def live(fn: Callable[[], None]) -> Callable[[], None]:
    """Run a page body as a fragment that refreshes itself (no full-page flicker)."""
    return st.fragment(run_every=context().refresh_s)(fn)


def guarded(fn: Callable[P, R]) -> Callable[P, R | None]:
    """Show a lake or query problem as a sentence, never as a stack trace."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R | None:
        try:
            return fn(*args, **kwargs)
        except duckdb.Error as exc:
            log.warning("dashboard query failed: %s", exc)
            st.error(
                f"Reading the lake failed: {type(exc).__name__}: {str(exc).splitlines()[0]}. "
                "If the lake was just created or its schema changed, restart `lagwatch stream` so it rewrites "
                "the views file, then reload this page."
            )
        except OSError as exc:
            st.error(f"Cannot open the lake: {exc}. Check [lake] path in config.toml.")
        return None

    return wrapper


def lake_page(body: Callable[[AppContext, Scope], None], every_cluster: bool = False) -> None:
    """Run a page that reads the lake, as a live fragment: its scope captioned first, and while
    the lake holds no data one sentence on how to fill it instead of a page of empty sections.
    ``every_cluster``: the page shows all clusters, not the picked one (the caption says so)."""

    @guarded
    def render() -> None:
        ctx = context()
        page_scope = scope()
        caption_scope(page_scope, every_cluster)
        if lake_is_empty(ctx.lake):
            empty(EMPTY_LAKE)
            return
        body(ctx, page_scope)

    live(render)()


def cluster_names(ctx: AppContext, in_lake: list[str]) -> list[str]:
    """The picker's clusters: every configured one (config order), then any other the lake holds."""
    return cluster_queries.configured_first([cluster.name for cluster in ctx.config.clusters], in_lake)


def no_jmx_targets_hint(ctx: AppContext, cluster: str, shows: str) -> str | None:
    """Why the picked cluster has no broker metrics, when it is that it has no JMX targets (None: it has some)."""
    try:
        configured = ctx.config.cluster_named(cluster)
    except KeyError:
        return f"Cluster {cluster} is not in config.toml (its rows are in the lake): no JMX targets to show {shows}."
    if ctx.config.jmx_targets(configured):
        return None
    return (
        f"No JMX targets for cluster {cluster} in config.toml: add one `[[clusters.jmx.targets]]` per broker under its "
        f"`[[clusters]]` entry (or `[[jmx.targets]]` beside `[cluster]`) to see {shows}."
    )


def lake_is_empty(lake: Lake) -> bool:
    """No data file in any table (the per-table `_schema.parquet` placeholders do not count)."""
    return not any(path for path in lake.path.glob("*/date=*/*.parquet") if not path.name.startswith("_"))


def empty(message: str) -> None:
    st.info(message, icon="ℹ️")


#: `lagwatch demo` serves broker JMX for brokers named like this (tansu has no JMX of its own).
SIMULATED_BROKER_PREFIX = "sim-"


def simulated_brokers_note(brokers: pd.Series) -> None:
    """Say so wherever the demo's simulated broker JMX is on screen, so nobody mistakes it for a broker."""
    simulated = sorted({str(b) for b in brokers.dropna() if str(b).startswith(SIMULATED_BROKER_PREFIX)})
    if simulated:
        st.caption(
            f"Simulated: broker {', '.join(simulated)} is `lagwatch demo`'s JMX simulator; its counters follow "
            "the demo's real produce and consume counts."
        )


def local_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """Every time column in the viewer's zone, for display."""
    zone = str(state.viewer_zone())
    shown = frame.copy()
    for column in shown.columns:
        if isinstance(shown[column].dtype, pd.DatetimeTZDtype):
            shown[column] = shown[column].dt.tz_convert(zone)
    return shown


#: What an empty cell shows, per column, and what it means (added to the column's help).
#: Streamlit draws a missing value as "None", which says nothing to a reader.
DASH = "—"
_NO_OWNER = ("no owner", "nobody owned the partition in that cycle, or the group was not described")
_NOT_DESCRIBED = "the broker did not describe the group in that cycle"
_NO_RATE = (DASH, "no rate yet (one observation)")
BLANKS: dict[str, tuple[str, str]] = {
    "eta_s": ("not catching up", "the consumer is not gaining on the producers, or there are no rates yet"),
    "owner_client_id": _NO_OWNER,
    "owner_host": _NO_OWNER,
    "owner_member_id": _NO_OWNER,
    "owner_pending": (DASH, "reconciled: no member waiting to own it"),
    "group_state": ("not described", _NOT_DESCRIBED),
    "members": (DASH, _NOT_DESCRIBED),
    "group_type": (DASH, "the broker never said (tansu, or DescribeGroups off before Kafka 3.8)"),
    "group_epoch": (DASH, "a classic group, or no commit log"),
    "retention_margin": (DASH, "no log start offset read yet"),
    "retention_margin_s": (DASH, "no log start offset or no produce rate yet"),
    "rate_span_s": (DASH, "no rates yet (one observation)"),
    "consume_rate": _NO_RATE,
    "produce_rate": _NO_RATE,
    "rebalancing_s": (DASH, "no group state read in the window, or rows written before rebalances were timed"),
}
#: The meaning of a dash in a column BLANKS does not name.
UNKNOWN_MEANING = "no value in the lake"


def table(frame: pd.DataFrame, **column_config: Any) -> None:
    """A table where no cell reads "None": an empty cell gets its column's word (BLANKS) or a dash,
    and the column's help says what that means."""
    shown, config = readable_blanks(local_frame(frame), column_config)
    st.dataframe(shown, hide_index=True, column_config=config or None)


def readable_blanks(frame: pd.DataFrame, column_config: dict[str, Any]) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Columns with empty cells as text (numbers in their column's format), blanks as words.

    Why text: Streamlit's grid has no "missing value" text of its own, and a number column cannot
    hold a word; a column without blanks keeps its type (and its numeric sort).
    """
    shown = frame.copy()
    config = dict(column_config)
    for name in shown.columns:
        values = shown[name]
        if not values.isna().any() or _holds_lists(values):
            continue
        word, meaning = BLANKS.get(str(name), (DASH, UNKNOWN_MEANING))
        previous = config.get(name) or {}
        label = previous.get("label") or str(name)
        helptext = "; ".join(part for part in (previous.get("help"), f"{word}: {meaning}") if part)
        shown[name] = [word if _blank(v) else _cell_text(v, previous) for v in values]
        config[name] = st.column_config.TextColumn(label, help=helptext)
    return shown, config


def _holds_lists(values: pd.Series) -> bool:
    return any(isinstance(v, list | tuple) for v in values.dropna().head(5))


def _blank(value: Any) -> bool:
    return value is None or bool(pd.isna(value))


def _cell_text(value: Any, config: dict[str, Any]) -> str:
    """A value as its (number or date) column would have drawn it."""
    if isinstance(value, pd.Timestamp | dt.datetime):
        return f"{value:%Y-%m-%d %H:%M:%S}"
    if isinstance(value, bool | str):
        return str(value)
    fmt = (config.get("type_config") or {}).get("format")
    if isinstance(value, int | float | np.integer | np.floating):
        return fmt % value if fmt and fmt.startswith("%") else number(value)
    return str(value)


def time_lag_text(seconds: float | None, method: str | None) -> str:
    """'≥ 3m 26s' for a lower bound (lagwatch.lake.TimeLagMethod), '3m 26s' for a measure, a dash when unknown."""
    if _blank(seconds):
        return DASH
    bound = "≥ " if method == TimeLagMethod.LOWER_BOUND else ""
    return bound + duration(seconds)


#: The time lag column's help: what "≥" and a dash mean.
TIME_LAG_HELP = (
    "How long ago the committed record was produced. ≥: a lower bound, the age of the commit (not "
    "interpolated: the log-end history does not reach back to the committed offset); "
    f"{DASH}: unknown yet (first observation)"
)


#: Under a table with a time lag column: the same, visible without hovering.
TIME_LAG_CAPTION = (
    "Time lag: ≥ marks a lower bound, the age of the commit (the records' times are not known back that far); "
    f"{DASH} means not known yet (first observation)."
)


def with_time_lag_text(
    frame: pd.DataFrame, column: str = "max_time_lag_s", method: str = "max_time_lag_method"
) -> pd.DataFrame:
    """`column` as text ('≥ 3m 26s', '1m 05s', '—') from it and its method column, which is dropped.
    Every caller's frame carries the method column (the group and topic-group queries select it)."""
    text = [time_lag_text(s, m) for s, m in zip(frame[column], frame[method], strict=True)]
    return frame.drop(columns=method).assign(**{column: text})


def by_time_lag_worst_first(groups: pd.DataFrame) -> pd.DataFrame:
    """Worst time lag first, a lower bound counted at its value; a lagging group whose time lag is
    unknown goes first (it may be the worst), by offset lag; then the rest by time lag, then lag."""
    unknown = groups["max_time_lag_s"].isna() & (groups["total_lag"].fillna(0) > 0)
    ranked = groups.assign(_unknown=unknown, _time=groups["max_time_lag_s"].fillna(-1.0))
    ranked = ranked.sort_values(["_unknown", "_time", "total_lag"], ascending=[False, False, False], kind="stable")
    return ranked.drop(columns=["_unknown", "_time"])


def group_columns() -> dict[str, Any]:
    """Column labels with units for group tables (the same wherever groups are listed)."""
    number = st.column_config.NumberColumn
    return {
        "total_lag": number("total lag (messages)"),
        "max_lag": number("max lag (messages)"),
        "max_time_lag_s": st.column_config.TextColumn("time lag", help=TIME_LAG_HELP),
        "consume_rate": number("consume (records/s)", format="%.1f"),
        "produce_rate": number("produce (records/s)", format="%.1f"),
        "eta_s": number("time to catch up (s)", format="%.0f"),
        "rate_span_s": number("rates over (s)", format="%.0f", help="the span the rates and ETA are measured over"),
    }


def owner_columns() -> dict[str, Any]:
    """Column labels for a group's partitions with the member owning each."""
    text = st.column_config.TextColumn
    return {
        "lag": st.column_config.NumberColumn("lag (messages)", format="%d"),
        "owner_client_id": text("owner client id"),
        "retention_margin": st.column_config.NumberColumn(
            "retention margin (records)", format="%d", help="negative: records deleted unread (LOSS)"
        ),
        "retention_margin_s": st.column_config.NumberColumn(
            "retention margin (s)", format="%.0f", help="at the produce rate, until retention reaches the commit"
        ),
        "owner_host": text("owner host"),
        "owner_member_id": text("owner member id"),
        "owner_changes": st.column_config.NumberColumn("owner changes (minute)", format="%d"),
    }


#: Alert tables: what happened and its value first, then the labels, then the bookkeeping.
ALERT_COLUMNS = (
    "ts",
    "event",
    "alertname",
    "severity",
    "value",
    "labels",
    "since_or_last",
    "receiver",
    "detail",
    "incident_key",
    "seq",
)


def label_chips(labels_json: str | None) -> list[str]:
    """'{"alertname": "X", "group_id": "g"}' -> ["group_id=g"]: one chip per label, not a JSON blob.

    alertname is left out because the table has its own column for it.
    """
    if not labels_json:
        return []
    try:
        labels = json.loads(labels_json)
    except ValueError:
        return [str(labels_json)]
    return [f"{key}={value}" for key, value in sorted(labels.items()) if key != "alertname"]


def alert_table(frame: pd.DataFrame) -> None:
    """Alert events or firing alerts: value first, labels as chips."""
    shown = frame.assign(labels=[label_chips(text) for text in frame["labels"]])
    table(
        shown[[c for c in ALERT_COLUMNS if c in shown.columns]],
        value=st.column_config.TextColumn("value"),  # a status word or a number (queries/alerts.py)
        labels=st.column_config.ListColumn("labels"),
        since_or_last=st.column_config.DatetimeColumn("since"),
    )


#: Tiles per row: at a 1280-px browser a fifth tile cut labels and values short ("not ca…").
TILES_PER_ROW = 3


def tiles(items: Sequence[tuple[str, str, str | None]]) -> None:
    """(label, value, help) tiles in rows of at most TILES_PER_ROW, so every label and value fits."""
    for start in range(0, len(items), TILES_PER_ROW):
        row = items[start : start + TILES_PER_ROW]
        for column, (label, value, helptext) in zip(st.columns(TILES_PER_ROW), row, strict=False):
            column.metric(label, value, help=helptext)


def chart(fig: Any, key: str) -> None:
    """A Plotly chart with a stable key (two charts alike must not collide on reruns)."""
    st.plotly_chart(fig, key=key, config={"displaylogo": False})


def number(value: float | int | None, unit: str = "") -> str:
    """A tile value: thousands separated, integers without decimals, '–' when unknown."""
    if value is None or pd.isna(value):
        return "–"
    text = f"{value:,.0f}" if float(value).is_integer() else f"{value:,.2f}"
    return f"{text} {unit}".strip()


def duration(seconds: float | None) -> str:
    """Seconds as the largest two units ('1h 05m'); '–' when unknown."""
    if seconds is None or pd.isna(seconds):
        return "–"
    total = round(float(seconds))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h {minutes:02d}m"
    if minutes:
        return f"{minutes}m {secs:02d}s"
    return f"{secs}s"


def caption_scope(scope: Scope, every_cluster: bool = False) -> None:
    zone = state.viewer_zone()
    who = "**All clusters**" if every_cluster else f"Cluster **{scope.cluster}**"
    st.caption(
        f"{who} · {scope.start.astimezone(zone):%Y-%m-%d %H:%M} → "
        f"{scope.end.astimezone(zone):%Y-%m-%d %H:%M} ({zone}) · refreshes every {context().refresh_s:g} s"
    )
