"""The dashboard's pages, as plain data: the navigation (`dashboard/app.py`) and the tests that
open every page are built from this one table, so a new page is its view file plus one row.

Why plain data and no `st.Page` here: importing Streamlit's page objects needs a running
Streamlit, and the tests and tools that list the pages run without one.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath


@dataclass(frozen=True)
class Page:
    """One entry of the navigation.

    ``file`` is the view script relative to `dashboard/` (as `st.Page` takes it); its name is
    the page's URL path, and ``default`` marks the page served at the root URL.
    """

    file: str
    title: str
    icon: str
    default: bool = False

    @property
    def name(self) -> str:
        """The page's URL path (Streamlit derives it from the file name)."""
        return PurePosixPath(self.file).stem


#: In navigation order; exactly one is the default.
PAGES: tuple[Page, ...] = (
    Page("views/overview.py", "Overview", ":material/monitor_heart:", default=True),
    Page("views/clusters.py", "All clusters", ":material/hub:"),
    Page("views/brokers.py", "Brokers", ":material/dns:"),
    Page("views/topics.py", "Topics", ":material/topic:"),
    Page("views/groups.py", "Consumer groups", ":material/groups:"),
    Page("views/alerts.py", "Alerts", ":material/notifications_active:"),
    Page("views/sql.py", "SQL", ":material/database_search:"),
    Page("views/pipeline.py", "Pipeline", ":material/conveyor_belt:"),
)


def default_page() -> Page:
    """The page served at the root URL."""
    (page,) = (page for page in PAGES if page.default)
    return page
