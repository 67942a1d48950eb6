"""`[dashboard] auth = "oidc"` in a real headless chromium against a real OpenID Connect provider.

The dashboard runs as the operator runs it (`lagwatch dashboard`, secrets in the environment),
the provider is `oidc-provider-mock` on loopback (harness/oidc_provider.py), and each
user logs in through the provider's own form. Cases: a visitor who has not logged in gets the
login page and nothing of the lake; an allowed user sees the pages and creates a silence (read
back from the silences file); a logged-in user who is not allowed sees the pages read-only and
is offered neither silencing nor SQL.
"""

from __future__ import annotations

import json
import os
import secrets
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from dashboard import login_secrets
from harness.oidc_provider import OidcProvider
from lagwatch.config import DASHBOARD_CLIENT_SECRET_ENV, DASHBOARD_COOKIE_SECRET_ENV, load_config
from lagwatch.silences import FILE_NAME
from tests.dashboard.conftest import KnownLake, broker_gauges
from tests.dashboard.test_browser import RENDER_TIMEOUT_MS, _metric, serving_dashboard

pytestmark = pytest.mark.slow

ALLOWED = "alice@example.com"
#: Logged in through the provider, in neither allow-list.
VIEWER = "bob@example.com"
#: In no allow-list by name, but in the allowed group (the claim travels in the real ID token).
GROUP_MEMBER = "carol@example.com"
ALLOWED_GROUP = "kafka-admins"


@dataclass
class LoginDashboard:
    url: str
    config_path: Path
    silences_file: Path
    #: The secrets `lagwatch dashboard` got through its environment.
    client_secret: str
    cookie_secret: str


def _oidc_config(known_lake: KnownLake, provider: OidcProvider) -> str:
    dashboard = f"""[dashboard]
auth = "oidc"
oidc_server_metadata_url = "{provider.discovery_url}"
oidc_client_id = "lagwatch-test"
allowed_users = ["{ALLOWED}"]
allowed_groups = ["{ALLOWED_GROUP}"]
"""
    text = known_lake.config_path.read_text().replace("[dashboard]\n", dashboard)
    return text.replace("[alerts]\n", '[alerts]\nstate_dir = "state/alerts"\n')


@pytest.fixture
def login_dashboard(known_lake: KnownLake, oidc_provider: OidcProvider, tmp_path: Path) -> Iterator[LoginDashboard]:
    oidc_provider.add_user(ALLOWED, email=ALLOWED, groups=["dev"])
    oidc_provider.add_user(VIEWER, email=VIEWER, groups=["dev"])
    oidc_provider.add_user(GROUP_MEMBER, email=GROUP_MEMBER, groups=["dev", ALLOWED_GROUP])
    known_lake.config_path.write_text(_oidc_config(known_lake, oidc_provider))
    client_secret, cookie_secret = secrets.token_urlsafe(16), secrets.token_urlsafe(32)
    env = {**os.environ, DASHBOARD_CLIENT_SECRET_ENV: client_secret, DASHBOARD_COOKIE_SECRET_ENV: cookie_secret}
    config = load_config(known_lake.config_path)
    silences_file = config.resolve_path(config.alerts.state_dir) / FILE_NAME
    with serving_dashboard(known_lake, tmp_path / "dashboard.log", env) as url:
        yield LoginDashboard(url, known_lake.config_path, silences_file, client_secret, cookie_secret)
    assert not login_secrets.secrets_path(config).exists(), "the generated secrets file outlived the dashboard"


def _log_in(browser, url: str, subject: str):  # type: ignore[no-untyped-def]
    """A fresh browser context (its own cookies), logged in as `subject` through the provider's form."""
    page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
    page.goto(url)
    page.get_by_role("button", name="Log in").click(timeout=RENDER_TIMEOUT_MS)
    page.get_by_placeholder("sub").fill(subject, timeout=RENDER_TIMEOUT_MS)
    page.get_by_role("button", name="Authorize").click()
    page.get_by_test_id("stSidebar").get_by_text(f"Logged in as {subject}").wait_for(timeout=RENDER_TIMEOUT_MS)
    return page


def _silences(dashboard: LoginDashboard) -> list[dict]:
    return json.loads(dashboard.silences_file.read_text()) if dashboard.silences_file.exists() else []


def test_the_generated_secrets_file_is_private(login_dashboard: LoginDashboard) -> None:
    path = login_secrets.secrets_path(load_config(login_dashboard.config_path))
    assert path.stat().st_mode & 0o777 == 0o600
    assert path.parent.stat().st_mode & 0o077 == 0
    text = path.read_text()
    assert f'cookie_secret = "{login_dashboard.cookie_secret}"' in text
    assert f'client_secret = "{login_dashboard.client_secret}"' in text
    assert 'client_id = "lagwatch-test"' in text and "/oauth2callback" in text


def test_a_visitor_sees_only_the_login_page(
    login_dashboard: LoginDashboard, known_lake: KnownLake, chromium: Any
) -> None:
    for path in ("", "/alerts", "/sql"):
        page = chromium.new_page()
        page.goto(login_dashboard.url + path)
        page.get_by_role("button", name="Log in").wait_for(timeout=RENDER_TIMEOUT_MS)
        page.wait_for_timeout(1000)
        assert page.get_by_test_id("stSidebarNav").count() == 0, f"{path}: navigation shown before login"
        assert page.get_by_test_id("stMetric").count() == 0, f"{path}: lake numbers shown before login"
        assert page.get_by_role("button", name="Create silence").count() == 0
        page.close()


def test_an_allowed_user_sees_the_pages_and_creates_a_silence(
    login_dashboard: LoginDashboard, known_lake: KnownLake, artifacts_dir: Path, chromium: Any
) -> None:
    assert _silences(login_dashboard) == []
    page = _log_in(chromium, login_dashboard.url, ALLOWED)
    urp = sum(broker_gauges(known_lake, "under_replicated_partitions").values())
    assert _metric(page, "Under-replicated partitions") == f"{urp:,.0f}"
    page.goto(f"{login_dashboard.url}/alerts")
    page.get_by_role("button", name="Create silence").wait_for(timeout=RENDER_TIMEOUT_MS)
    assert page.get_by_text("Read-only:").count() == 0
    page.get_by_label("Matchers").fill("alertname=ConsumerLagHigh\ngroup_id=orders-app")
    page.get_by_label("Comment").fill("deploy of orders-app")
    page.get_by_role("button", name="Create silence").click()
    deadline = time.monotonic() + 30
    while not _silences(login_dashboard) and time.monotonic() < deadline:
        time.sleep(0.25)
    [silence] = _silences(login_dashboard)
    assert silence["matchers"] == {"alertname": "ConsumerLagHigh", "group_id": "orders-app"}
    assert (silence["created_by"], silence["comment"]) == (ALLOWED, "deploy of orders-app")
    _metric(page, "Active silences")
    page.screenshot(path=str(artifacts_dir / "dashboard-login-allowed-alerts.png"), full_page=True)

    member = _log_in(chromium, login_dashboard.url, GROUP_MEMBER)
    member.goto(f"{login_dashboard.url}/sql")
    member.get_by_role("textbox", name="SQL").fill("SELECT group_id FROM group_status")
    member.get_by_role("button", name="Run").click()
    rows = len(known_lake.rows["group_status"]) - 1  # one row was rewritten by a newer version
    member.get_by_text(f"{rows} row(s)").wait_for(timeout=RENDER_TIMEOUT_MS)


def test_a_user_not_allowed_can_neither_silence_nor_run_sql(
    login_dashboard: LoginDashboard, known_lake: KnownLake, artifacts_dir: Path, chromium: Any
) -> None:
    page = _log_in(chromium, login_dashboard.url, VIEWER)
    sidebar = page.get_by_test_id("stSidebar")
    # the sidebar draws its lines one by one after "Logged in as": wait for each, then count
    for shown in (sidebar.get_by_text("Read-only"), sidebar.get_by_role("button", name="Log out")):
        shown.wait_for(timeout=RENDER_TIMEOUT_MS)
        assert shown.count() == 1

    page.goto(f"{login_dashboard.url}/alerts")
    firing = sum(1 for r in known_lake.rows["alert_events"] if r["event"] == "firing")
    assert _metric(page, "Firing events") == str(firing)  # the page itself is there to read
    note = page.get_by_text("Read-only: creating or expiring silences is unavailable because")
    note.wait_for(timeout=RENDER_TIMEOUT_MS)
    assert VIEWER in note.inner_text() and "dashboard.allowed_users" in note.inner_text()
    assert page.get_by_role("button", name="Create silence").is_disabled()
    page.screenshot(path=str(artifacts_dir / "dashboard-login-read-only-alerts.png"), full_page=True)

    page.goto(f"{login_dashboard.url}/sql")
    page.get_by_text("Read-only: running SQL is unavailable because").wait_for(timeout=RENDER_TIMEOUT_MS)
    run = page.get_by_role("button", name="Run")
    assert run.is_disabled()
    run.click(force=True)  # a click on the disabled button changes nothing
    page.wait_for_timeout(1500)
    assert page.get_by_text("row(s)").count() == 0
    assert _silences(login_dashboard) == []
