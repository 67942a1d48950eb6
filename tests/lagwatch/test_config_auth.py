"""lagwatch/config/ ([dashboard], [api]) authentication: no open door off loopback, secrets from the environment."""

from __future__ import annotations

from typing import Any

import pytest

from lagwatch.config import (
    API_TOKEN_ENV,
    DASHBOARD_CLIENT_SECRET_ENV,
    DASHBOARD_COOKIE_SECRET_ENV,
    ConfigError,
    is_loopback,
    parse_config,
)

OIDC = {
    "auth": "oidc",
    "oidc_server_metadata_url": "https://idp/.well-known/openid-configuration",
    "oidc_client_id": "c",
}


@pytest.mark.parametrize("host", ["127.0.0.1", "127.5.0.9", "localhost", "::1", "[::1]"])
def test_loopback_addresses(host: str) -> None:
    assert is_loopback(host)


@pytest.mark.parametrize("host", ["0.0.0.0", "", "::", "10.1.2.3", "192.168.1.4", "dashboard.internal", "lagwatch"])
def test_addresses_others_can_reach(host: str) -> None:
    assert not is_loopback(host)


@pytest.mark.parametrize("section", ["dashboard", "api"])
def test_a_non_loopback_host_without_auth_is_refused_naming_the_keys(section: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_config({section: {"host": "0.0.0.0"}}, "x.toml", environ={})
    assert (
        f"{section}.host = 0.0.0.0 is not loopback and {section}.auth = none: "
        f"set {section}.auth or {section}.allow_anonymous = true"
    ) in str(err.value)


@pytest.mark.parametrize(
    "settings",
    [
        {"dashboard": {"host": "0.0.0.0", "allow_anonymous": True}},
        {"api": {"host": "0.0.0.0", "allow_anonymous": True}},
        {"api": {"host": "0.0.0.0", "auth": "token"}},
        {"dashboard": {"host": "0.0.0.0", "public_url": "https://lagwatch.example.com", **OIDC}},
        {},
    ],
)
def test_allowed_open_or_authenticated_hosts(settings: dict[str, Any]) -> None:
    parse_config(settings, "x.toml", environ={})


def test_defaults_stay_loopback_without_auth() -> None:
    config = parse_config({}, "x.toml", environ={})
    assert (config.dashboard.host, config.dashboard.auth) == ("127.0.0.1", "none")
    assert (config.api.host, config.api.auth) == ("127.0.0.1", "none")


def test_oidc_needs_its_provider_and_an_outside_host_its_public_url() -> None:
    with pytest.raises(ConfigError, match=r"dashboard\.oidc_server_metadata_url and dashboard\.oidc_client_id"):
        parse_config({"dashboard": {"auth": "oidc"}}, "x.toml", environ={})
    with pytest.raises(ConfigError, match=r"dashboard\.public_url"):
        parse_config({"dashboard": {"host": "0.0.0.0", **OIDC}}, "x.toml", environ={})
    local = parse_config({"dashboard": {"port": 8600, **OIDC}}, "x.toml", environ={}).dashboard
    assert local.redirect_uri == "http://127.0.0.1:8600/oauth2callback"
    public = {"public_url": "https://lagwatch.example.com/", **OIDC}
    assert parse_config({"dashboard": public}, environ={}).dashboard.redirect_uri == (
        "https://lagwatch.example.com/oauth2callback"
    )


@pytest.mark.parametrize(
    ("section", "key", "env_var"),
    [
        ("dashboard", "cookie_secret", DASHBOARD_COOKIE_SECRET_ENV),
        ("dashboard", "client_secret", DASHBOARD_CLIENT_SECRET_ENV),
        ("dashboard", "oidc_client_secret", DASHBOARD_CLIENT_SECRET_ENV),
        ("api", "token", API_TOKEN_ENV),
    ],
)
def test_a_secret_in_the_file_is_refused_naming_its_variable(section: str, key: str, env_var: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_config({section: {key: "hunter2"}}, "x.toml", environ={})
    assert f"'{key}' is a secret" in str(err.value) and env_var in str(err.value)


def test_secrets_come_from_the_environment_and_are_demanded_only_when_used() -> None:
    environ = {
        DASHBOARD_CLIENT_SECRET_ENV: "client-s",
        DASHBOARD_COOKIE_SECRET_ENV: "cookie-s",
        API_TOKEN_ENV: "t0k3n-s",
    }
    config = parse_config({"dashboard": OIDC, "api": {"auth": "token"}}, "x.toml", environ=environ)
    assert config.dashboard.oidc_secrets() == ("client-s", "cookie-s")
    assert config.api.token() == "t0k3n-s"
    assert "client-s" not in repr(config) and "t0k3n-s" not in str(config.model_dump())

    bare = parse_config({"dashboard": OIDC, "api": {"auth": "token"}}, "x.toml", environ={})  # loads: sql needs none
    with pytest.raises(ConfigError, match=DASHBOARD_CLIENT_SECRET_ENV):
        bare.dashboard.oidc_secrets()
    with pytest.raises(ConfigError, match=API_TOKEN_ENV):
        bare.api.token()
    only_client = parse_config({"dashboard": OIDC}, "x.toml", environ={DASHBOARD_CLIENT_SECRET_ENV: "client-s"})
    with pytest.raises(ConfigError, match=DASHBOARD_COOKIE_SECRET_ENV):
        only_client.dashboard.oidc_secrets()
