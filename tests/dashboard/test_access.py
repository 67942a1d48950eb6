"""dashboard/access.py: who may act, from the ID token's claims and [dashboard]."""

from __future__ import annotations

from typing import Any

import pytest

from dashboard.access import decide, user_groups
from lagwatch.config import DashboardConfig

OIDC = {
    "auth": "oidc",
    "oidc_server_metadata_url": "http://idp/.well-known/openid-configuration",
    "oidc_client_id": "c",
}


def _dashboard(**settings: Any) -> DashboardConfig:
    return DashboardConfig.model_validate({**OIDC, **settings})


def _login(**claims: Any) -> dict[str, Any]:
    return {"is_logged_in": True, **claims}


def test_without_auth_everyone_may_act() -> None:
    granted = decide({}, DashboardConfig())
    assert granted.can_act and granted.user == ""


def test_nobody_logged_in_may_not_act() -> None:
    granted = decide({"is_logged_in": False}, _dashboard(allowed_users=["alice@example.com"]))
    assert not granted.can_act and "nobody is logged in" in granted.reason


@pytest.mark.parametrize(
    "claims",
    [
        {"sub": "u-1", "email": "alice@example.com"},
        {"sub": "u-1", "email": "Alice@Example.COM", "email_verified": True},
        {"sub": "alice@example.com"},
    ],
)
def test_an_allowed_email_or_subject_may_act(claims: dict[str, Any]) -> None:
    granted = decide(_login(**claims), _dashboard(allowed_users=["alice@example.com"]))
    assert granted.can_act, granted


def test_subjects_compare_exactly() -> None:
    dashboard = _dashboard(allowed_users=["u-ABC"])
    assert decide(_login(sub="u-ABC"), dashboard).can_act
    assert not decide(_login(sub="u-abc"), dashboard).can_act


def test_an_unverified_email_does_not_count() -> None:
    dashboard = _dashboard(allowed_users=["alice@example.com"])
    granted = decide(_login(sub="mallory", email="alice@example.com", email_verified=False), dashboard)
    assert not granted.can_act


def test_a_user_in_an_allowed_group_may_act() -> None:
    dashboard = _dashboard(allowed_groups=["kafka-admins"])
    assert decide(_login(sub="b", email="bob@example.com", groups=["dev", "kafka-admins"]), dashboard).can_act
    assert decide(_login(sub="b", groups="kafka-admins"), dashboard).can_act
    denied = decide(_login(sub="b", email="bob@example.com", groups=["dev"]), dashboard)
    assert not denied.can_act
    assert denied.user == "bob@example.com"
    assert "dashboard.allowed_users" in denied.reason and "dashboard.allowed_groups" in denied.reason


def test_the_groups_claim_is_configurable_and_may_be_nested() -> None:
    nested = _dashboard(groups_claim="realm_access.roles", allowed_groups=["ops"])
    assert decide(_login(sub="c", realm_access={"roles": ["ops"]}), nested).can_act
    assert not decide(_login(sub="c", groups=["ops"]), nested).can_act
    namespaced = _dashboard(groups_claim="https://example.com/groups", allowed_groups=["ops"])
    assert decide(_login(sub="c", **{"https://example.com/groups": ["ops"]}), namespaced).can_act


def test_user_groups_ignores_what_is_not_a_name_or_list() -> None:
    assert user_groups({"groups": {"a": 1}}, "groups") == set()
    assert user_groups({"groups": ["a", 2]}, "groups") == {"a", "2"}
    assert user_groups({}, "groups") == set()
    assert user_groups({"groups": ["a"]}, "") == set()


def test_a_logged_in_user_is_not_enough_without_any_allow_list() -> None:
    granted = decide(_login(sub="d", email="dave@example.com", groups=["kafka-admins"]), _dashboard())
    assert not granted.can_act and granted.user == "dave@example.com"
