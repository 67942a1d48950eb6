"""Who may act on the dashboard: one decision from the logged-in user's claims and `[dashboard]`.

Looking is for anyone who logged in; acting (creating or expiring a silence, running SQL,
running a backtest) is for a user named in `allowed_users` (email or subject) or holding a group
of `allowed_groups` in the `groups_claim` of the ID token. A pure function, so every page asks
the same question and the answer is unit-tested without a browser or a provider.

An email counts only when the provider has not marked it unverified (`email_verified` false):
some providers let users type any address, and an allow-list of emails must not be met by
typing the administrator's. Emails compare case-insensitively, subjects exactly.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lagwatch.config import DashboardConfig

#: What an allowed user may do and others may not (for the page's read-only line and the docs).
ACTIONS = "creating or expiring silences, running SQL and running a backtest"


@dataclass(frozen=True)
class Access:
    """The decision for one session: who it is, whether it may act, and if not, why."""

    #: Email (else subject) of the logged-in user; "" without a login (auth = "none", or not yet).
    user: str
    can_act: bool
    #: Why `can_act` is False, as a clause for the page ("… is unavailable because <reason>").
    reason: str = ""


def _claim(claims: Mapping[str, Any], name: str) -> Any:
    """The claim `name`, or the nested one a dotted path names ("realm_access.roles").

    A claim whose own name holds dots (namespaced claims like "https://example.com/groups") is
    looked up whole first.
    """
    if name in claims:
        return claims[name]
    node: Any = claims
    for part in name.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


def user_groups(claims: Mapping[str, Any], groups_claim: str) -> set[str]:
    """The groups in the claim: a list of names, or a single name."""
    value = _claim(claims, groups_claim) if groups_claim else None
    if isinstance(value, str):
        return {value}
    if isinstance(value, list | tuple):
        return {str(item) for item in value}
    return set()


def _is_allowed_user(claims: Mapping[str, Any], allowed_users: list[str]) -> bool:
    subject = claims.get("sub")
    if isinstance(subject, str) and subject in allowed_users:
        return True
    email = claims.get("email")
    if not isinstance(email, str) or claims.get("email_verified") is False:
        return False
    return email.casefold() in {user.casefold() for user in allowed_users}


def decide(claims: Mapping[str, Any], dashboard: DashboardConfig) -> Access:
    """The session's access: `claims` are Streamlit's `st.user` (ID-token claims plus is_logged_in)."""
    if dashboard.auth == "none":
        return Access(user="", can_act=True)
    if not claims.get("is_logged_in"):
        return Access(user="", can_act=False, reason="nobody is logged in")
    user = str(claims.get("email") or claims.get("sub") or "this user")
    if _is_allowed_user(claims, dashboard.allowed_users):
        return Access(user=user, can_act=True)
    if user_groups(claims, dashboard.groups_claim) & set(dashboard.allowed_groups):
        return Access(user=user, can_act=True)
    return Access(
        user=user,
        can_act=False,
        reason=f"{user} is neither in dashboard.allowed_users nor in a group of dashboard.allowed_groups",
    )
