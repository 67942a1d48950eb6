"""`[api]`: the read-only HTTP API (`lagwatch api`)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, PrivateAttr, model_validator

from lagwatch.config.base import StrictModel
from lagwatch.config.network import refuse_open_door
from lagwatch.config.secrets import API_TOKEN_ENV, refuse_secret_keys, required_secret


class ApiConfig(StrictModel):
    """The HTTP API beside the dashboard: Prometheus /metrics, Burrow's v3 API, health."""

    #: Loopback by default; any other address needs auth = "token" (or allow_anonymous = true).
    host: str = "127.0.0.1"
    #: Burrow's and kafka-lag-exporter's customary port, so scrape configs keep working.
    port: int = Field(8000, ge=1, le=65535)
    #: The newest lake rows are read at most once per this many seconds and shared by every request.
    cache_s: float = Field(5, gt=0)
    #: Rows of lag_1m and group_status older than this are not "current" (a vanished group drops out).
    lookback_s: float = Field(600, gt=0)
    #: /metrics exports at most this many series; the finest labels (partition) are dropped first.
    #: Sized so 20,000 groups keep every group series (6 each, 9 with rebalance data) and the
    #: worst groups keep their topic and partition series.
    max_series: int = Field(200_000, ge=10)
    #: /readyz fails when the newest lake data or a component's report is older than this.
    ready_max_age_s: float = Field(180, gt=0)
    #: none: open to whoever reaches the port; token: every path but /healthz and /readyz needs
    #: "Authorization: Bearer <token>", the token from LAGWATCH_API_TOKEN.
    auth: Literal["none", "token"] = "none"
    #: Serve a non-loopback host with auth = "none" anyway (e.g. behind a proxy that authenticates).
    allow_anonymous: bool = False

    _token: str = PrivateAttr("")

    @model_validator(mode="before")
    @classmethod
    def _no_secrets_in_file(cls, data: Any) -> Any:
        return refuse_secret_keys(data, {"token": API_TOKEN_ENV})

    @model_validator(mode="after")
    def _auth_settings(self) -> ApiConfig:
        refuse_open_door("api", self.host, self.auth, self.allow_anonymous)
        return self

    def token(self) -> str:
        """The bearer token from the environment; a ConfigError naming the variable if unset."""
        return required_secret(self._token, API_TOKEN_ENV, "api.auth = token needs the token")
