"""Who may act, enforced where the page runs (Streamlit's AppTest, a logged-in `st.user` set per test).

The browser tests (test_login.py) show what each user is offered; these send what a browser
cannot: a click on a button the page drew disabled, as a forged websocket message would. The
server must not act on it for a user who may not, and must for one who may (the control that
shows the click itself is delivered).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from lagwatch.config import load_config
from lagwatch.silences import FILE_NAME
from tests.dashboard.conftest import KnownLake

APP = str(Path(__file__).resolve().parents[2] / "dashboard" / "app.py")
ALLOWED = "alice@example.com"
VIEWER = "bob@example.com"


@pytest.fixture
def oidc_lake(known_lake: KnownLake) -> KnownLake:
    """The known lake's config with auth = "oidc" and alice allowed (no provider is contacted by AppTest)."""
    login = f"""[dashboard]
auth = "oidc"
oidc_server_metadata_url = "http://127.0.0.1:9/.well-known/openid-configuration"
oidc_client_id = "lagwatch-test"
allowed_users = ["{ALLOWED}"]
"""
    text = known_lake.config_path.read_text().replace("[dashboard]\n", login)
    known_lake.config_path.write_text(text.replace("[alerts]\n", '[alerts]\nstate_dir = "state/alerts"\n'))
    return known_lake


def _open(page: str, user: dict[str, Any]) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.user = user
    at.run()
    if user.get("is_logged_in"):
        at.switch_page(f"views/{page}.py")
        at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _logged_in(email: str) -> dict[str, Any]:
    return {"is_logged_in": True, "email": email, "sub": f"sub-{email}"}


def _forged_click(at: AppTest, label: str) -> None:
    """Press the button even if it is disabled: what a hand-made websocket message does."""
    [button] = [b for b in at.button if b.label == label]
    button._value = True  # AppTest's click() refuses a disabled button, as a browser does
    at.run()


def _silences(lake: KnownLake) -> list[dict[str, Any]]:
    config = load_config(lake.config_path)
    path = config.resolve_path(config.alerts.state_dir) / FILE_NAME
    return json.loads(path.read_text()) if path.exists() else []


def test_nobody_logged_in_gets_the_login_page_only(oidc_lake: KnownLake) -> None:
    at = _open("overview", {"is_logged_in": False})
    assert [b.label for b in at.button] == ["Log in"]
    assert not at.metric and not at.dataframe


@pytest.mark.parametrize(("user", "runs"), [(VIEWER, False), (ALLOWED, True)])
def test_sql_runs_only_for_an_allowed_user(oidc_lake: KnownLake, user: str, runs: bool) -> None:
    at = _open("sql", _logged_in(user))
    at.text_area(key="sql_text").input("SELECT group_id FROM group_status")
    _forged_click(at, "Run")
    assert ("sql_result" in at.session_state) is runs
    notes = [i.value for i in at.info if str(i.value).startswith("Read-only: running SQL")]
    assert bool(notes) is not runs


@pytest.mark.parametrize(("user", "creates"), [(VIEWER, False), (ALLOWED, True)])
def test_silences_are_created_only_by_an_allowed_user(oidc_lake: KnownLake, user: str, creates: bool) -> None:
    at = _open("alerts", _logged_in(user))
    _forged_click(at, "Create silence")
    made = _silences(oidc_lake)
    assert len(made) == int(creates)
    if creates:
        assert made[0]["created_by"] == ALLOWED  # the login, not a text field anyone can fill
