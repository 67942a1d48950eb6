"""`[dashboard]`: the Streamlit server: where it listens, and who may look and act."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, PrivateAttr, model_validator

from lagwatch.config.base import StrictModel
from lagwatch.config.network import is_loopback, refuse_open_door
from lagwatch.config.secrets import (
    DASHBOARD_CLIENT_SECRET_ENV,
    DASHBOARD_COOKIE_SECRET_ENV,
    refuse_secret_keys,
    required_secret,
)


class DashboardConfig(StrictModel):
    """The Streamlit server. Whether the alert engine runs beside it is `[alerts] run`."""

    #: Address the dashboard listens on; any but loopback needs auth = "oidc" (or allow_anonymous).
    host: str = "127.0.0.1"
    #: Port the dashboard listens on.
    port: int = Field(8501, ge=1, le=65535)
    #: Seconds between two automatic refreshes of a page.
    refresh_s: float = Field(10, gt=0)

    # -- who may look, who may act (docs/dashboard.md, "Authentication") --
    #: none: anyone who reaches the port may look and act (refused off loopback unless
    #: allow_anonymous); oidc: log in through an OpenID Connect provider.
    auth: Literal["none", "oidc"] = "none"
    #: Serve a non-loopback host with auth = "none" anyway (e.g. behind a proxy that authenticates).
    allow_anonymous: bool = False
    #: auth = "oidc": the provider's discovery document (…/.well-known/openid-configuration).
    oidc_server_metadata_url: str = ""
    #: auth = "oidc": the client id registered with the provider (its secret comes from the environment).
    oidc_client_id: str = ""
    #: Scopes asked for at login; add the one your provider needs to put groups in the ID token.
    oidc_scopes: list[str] = Field(default_factory=lambda: ["openid", "email", "profile"])
    #: The address browsers use to reach the dashboard; the redirect URI registered with the
    #: provider is this plus "/oauth2callback". Empty: http://host:port.
    public_url: str = ""
    #: Users who may act (create or expire silences, run SQL, run a backtest): emails or subjects.
    allowed_users: list[str] = Field(default_factory=list)
    #: ID-token claim holding the user's groups (a dotted path reaches a nested claim, e.g.
    #: "realm_access.roles"); members of any allowed_groups may act.
    groups_claim: str = "groups"
    #: Groups (values of `groups_claim`) whose members may act.
    allowed_groups: list[str] = Field(default_factory=list)

    _oidc_client_secret: str = PrivateAttr("")
    _cookie_secret: str = PrivateAttr("")

    @model_validator(mode="before")
    @classmethod
    def _no_secrets_in_file(cls, data: Any) -> Any:
        secrets = {"oidc_client_secret": DASHBOARD_CLIENT_SECRET_ENV, "client_secret": DASHBOARD_CLIENT_SECRET_ENV}
        return refuse_secret_keys(data, {**secrets, "cookie_secret": DASHBOARD_COOKIE_SECRET_ENV})

    @model_validator(mode="after")
    def _auth_settings(self) -> DashboardConfig:
        refuse_open_door("dashboard", self.host, self.auth, self.allow_anonymous)
        if self.auth == "oidc":
            missing = [k for k in ("oidc_server_metadata_url", "oidc_client_id") if not getattr(self, k)]
            if not self.public_url and not is_loopback(self.host):
                missing.append("public_url (the address browsers use, for the redirect URI)")
            if missing:
                raise ValueError(f"auth = oidc needs {' and '.join(f'dashboard.{k}' for k in missing)}")
        return self

    @property
    def redirect_uri(self) -> str:
        """Where the provider sends the browser back after login (register it with the provider)."""
        base = self.public_url or f"http://{self.host}:{self.port}"
        return f"{base.rstrip('/')}/oauth2callback"

    def oidc_secrets(self) -> tuple[str, str]:
        """(client secret, cookie secret) from the environment; a ConfigError naming the variable if unset."""
        why = "dashboard.auth = oidc needs the {}"
        return (
            required_secret(self._oidc_client_secret, DASHBOARD_CLIENT_SECRET_ENV, why.format("client secret")),
            required_secret(self._cookie_secret, DASHBOARD_COOKIE_SECRET_ENV, why.format("cookie secret")),
        )
