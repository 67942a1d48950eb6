"""Streamlit entry point: sidebar (cluster, time range) and the page navigation.

The pages live in `dashboard/views/`, not `pages/`: Streamlit treats a `pages/` folder next to
the entry script as the old automatic multipage mode, which runs a page deep-linked by URL
without this script (so without the sidebar), fighting `st.navigation`.
The navigation is built from the page table, `dashboard.pages`.

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

from dashboard import access, pages, state, ui  # noqa: E402
from dashboard.queries import Lake  # noqa: E402
from dashboard.queries import clusters as cluster_queries  # noqa: E402


def navigation_pages() -> list[st.Page]:
    """The page table (`dashboard.pages`) as Streamlit's page objects, in its order."""
    return [st.Page(page.file, title=page.title, icon=page.icon, default=page.default) for page in pages.PAGES]


#: How long the picker's list of clusters in the lake is reused: every page load draws the sidebar,
#: and the list (a scan of the last hour of every group's status) changes when a cluster starts or
#: stops writing, which a picker may show a minute late.
CLUSTERS_TTL_S = 60


@ui.guarded
def _known_clusters(lake: Lake) -> list[str]:
    return [] if ui.lake_is_empty(lake) else _lake_clusters(lake)


@st.cache_data(ttl=CLUSTERS_TTL_S, show_spinner=False)
def _lake_clusters(lake: Lake) -> list[str]:
    """Shared by every session of this server (keyed by the lake, so two configs never mix)."""
    return cluster_queries.names(lake)


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
    navigation = st.navigation(navigation_pages())
    st.sidebar.title("Lagwatch")
    if login:
        identity(ui.access())
    state.sidebar_scope(ui.cluster_names(ctx, _known_clusters(ctx.lake) or []), ctx.config.cluster.name)
    navigation.run()


main()
