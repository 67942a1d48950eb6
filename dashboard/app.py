"""Streamlit entry point: sidebar (cluster, time range) and the page navigation.

The pages live in `dashboard/views/`, not `pages/`: Streamlit treats a `pages/` folder next to
the entry script as the old automatic multipage mode, which runs a page deep-linked by URL
without this script (so without the sidebar), fighting `st.navigation`.

`lagwatch dashboard` runs `streamlit run dashboard/app.py` with $LAGWATCH_CONFIG set. The
sidebar widgets write their choice to the URL's query parameters, which each page reads
(`dashboard.ui.scope`), so a copied link reproduces the view. With `[dashboard] auth = "oidc"`
a visitor who has not logged in gets the login page and nothing else (`st.login`); who may act
on the pages is `dashboard.access`.
"""

from __future__ import annotations

import sys
from pathlib import Path

import streamlit as st

# `streamlit run dashboard/app.py` puts dashboard/ on sys.path, not the project root.
_ROOT = str(Path(__file__).resolve().parent.parent)
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from dashboard import access, queries, state, ui  # noqa: E402

PAGES = [
    st.Page("views/overview.py", title="Overview", icon=":material/monitor_heart:", default=True),
    st.Page("views/clusters.py", title="All clusters", icon=":material/hub:"),
    st.Page("views/brokers.py", title="Brokers", icon=":material/dns:"),
    st.Page("views/topics.py", title="Topics", icon=":material/topic:"),
    st.Page("views/groups.py", title="Consumer groups", icon=":material/groups:"),
    st.Page("views/alerts.py", title="Alerts", icon=":material/notifications_active:"),
    st.Page("views/sql.py", title="SQL", icon=":material/database_search:"),
    st.Page("views/pipeline.py", title="Pipeline", icon=":material/conveyor_belt:"),
]


@ui.guarded
def _known_clusters(lake: queries.Lake) -> list[str]:
    return [] if ui.lake_is_empty(lake) else queries.clusters(lake)


def login_page() -> None:
    """All a visitor sees before logging in: no page, no query, no number from the lake."""
    st.title("Lagwatch")
    st.write("Log in to see the Kafka clusters this dashboard watches.")
    st.button("Log in", type="primary", on_click=st.login)


def identity(granted: access.Access) -> None:
    """Who is logged in, what they may do, and the way out."""
    st.sidebar.caption(f"Logged in as **{granted.user}**")
    st.sidebar.caption(
        f"May act: {access.ACTIONS}." if granted.can_act else "Read-only: not an allowed user (dashboard.allowed_*)."
    )
    st.sidebar.button("Log out", on_click=st.logout)


def main() -> None:
    st.set_page_config(page_title="Lagwatch", page_icon=":material/monitor_heart:", layout="wide")
    ctx = ui.context()
    login = ctx.config.dashboard.auth == "oidc"
    if login and not st.user.is_logged_in:
        login_page()
        return
    navigation = st.navigation(PAGES)
    st.sidebar.title("Lagwatch")
    if login:
        identity(ui.access())
    state.sidebar_scope(ui.cluster_names(ctx, _known_clusters(ctx.lake) or []), ctx.config.cluster.name)
    navigation.run()


main()
