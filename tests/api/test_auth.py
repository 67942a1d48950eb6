"""`[api] auth = "token"` on the real `lagwatch api` process, and the refusal to serve an open door.

Every path but /healthz and /readyz needs `Authorization: Bearer <token>`; a refusal is a 401
with a Bearer challenge, Burrow-shaped under /v3. A non-loopback host without auth is refused
at start (exit 2, the key named) unless allow_anonymous says so.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable
from pathlib import Path

import pytest

from api.auth import bearer_token
from harness.processes import run_lagwatch
from lagwatch import exit_codes
from lagwatch.config import API_TOKEN_ENV
from shell.broker import free_port
from tests.api.conftest import CLUSTER, KnownLake, RunningApi, write_config

GUARDED = ("/metrics", "/v3/kafka", f"/v3/kafka/{CLUSTER}/consumer", "/burrow/admin", "/no/such/path")


@pytest.fixture
def token(monkeypatch: pytest.MonkeyPatch) -> str:
    """A fresh token in $LAGWATCH_API_TOKEN, which `lagwatch api` (a child of this process) inherits."""
    value = secrets.token_urlsafe(24)
    monkeypatch.setenv(API_TOKEN_ENV, value)
    return value


@pytest.fixture
def guarded_api(known_lake: KnownLake, start_api: Callable[..., RunningApi], token: str) -> RunningApi:
    return start_api(known_lake.root, auth="token")


def test_bearer_token_parsing() -> None:
    assert bearer_token("Bearer abc") == "abc"
    assert bearer_token("bearer  abc ") == "abc"
    assert bearer_token("Basic YWxhZGRpbjpvcGVuc2VzYW1l") is None
    assert bearer_token("Bearer") is None
    assert bearer_token("") is None


@pytest.mark.parametrize("path", GUARDED)
def test_no_token_is_401_with_a_bearer_challenge(guarded_api: RunningApi, path: str) -> None:
    code, headers, body = guarded_api.get(path)
    assert code == 401, body
    assert headers["www-authenticate"] == 'Bearer realm="lagwatch"'
    if path.startswith("/v3/"):
        answer = json.loads(body)
        assert answer["error"] is True and "missing bearer token" in answer["message"]
        assert answer["request"]["url"] == path
    else:
        assert headers["content-type"].startswith("text/plain") and b"missing bearer token" in body


def test_a_wrong_token_is_401_invalid_token(guarded_api: RunningApi, token: str) -> None:
    for wrong in (token[:-1], token + "x", "", secrets.token_urlsafe(24)):
        code, headers, body = guarded_api.get("/v3/kafka", {"Authorization": f"Bearer {wrong}"})
        assert code == 401, (wrong, body)
        assert json.loads(body)["error"] is True
    code, headers, _ = guarded_api.get("/metrics", {"Authorization": f"Bearer {token}x"})
    assert (code, headers["www-authenticate"]) == (401, 'Bearer realm="lagwatch", error="invalid_token"')
    assert guarded_api.get("/metrics", {"Authorization": f"Basic {token}"})[0] == 401


def test_the_token_opens_every_path(guarded_api: RunningApi, token: str, known_lake: KnownLake) -> None:
    auth = {"Authorization": f"Bearer {token}"}
    code, _, body = guarded_api.get("/metrics", auth)
    assert code == 200
    groups = {row["group_id"] for row in known_lake.rows["group_status"]}
    assert all(f'group="{g}"' in body.decode() for g in groups)
    code, _, body = guarded_api.get(f"/v3/kafka/{CLUSTER}/consumer", auth)
    assert code == 200 and set(json.loads(body)["consumers"]) == groups
    assert guarded_api.get("/burrow/admin", auth)[:3:2] == (200, b"GOOD")
    assert guarded_api.get("/no/such/path", auth)[0] == 404  # past the guard, the router answers


def test_health_checks_stay_open(guarded_api: RunningApi) -> None:
    code, _, body = guarded_api.get("/healthz")
    assert (code, json.loads(body)) == (200, {"status": "ok"})
    code, _, body = guarded_api.get("/readyz")
    assert code in (200, 503) and "ready" in json.loads(body)  # its answer, not the guard's


def test_token_auth_without_the_token_in_the_environment_exits_2(
    tmp_path: Path, known_lake: KnownLake, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(API_TOKEN_ENV, raising=False)
    config = write_config(tmp_path, known_lake.root, free_port(), auth="token")
    done = run_lagwatch(config, "api", timeout_s=60)
    assert done.returncode == exit_codes.BAD_INPUT, done.stderr
    assert API_TOKEN_ENV in done.stderr


def test_a_non_loopback_host_without_auth_exits_2(tmp_path: Path, known_lake: KnownLake) -> None:
    config = write_config(tmp_path, known_lake.root, free_port(), host="0.0.0.0")
    done = run_lagwatch(config, "api", timeout_s=60)
    assert done.returncode == exit_codes.BAD_INPUT, done.stderr
    assert "api.host = 0.0.0.0 is not loopback and api.auth = none" in done.stderr
    assert "api.allow_anonymous = true" in done.stderr


def test_allow_anonymous_serves_a_non_loopback_host(
    known_lake: KnownLake, start_api: Callable[..., RunningApi]
) -> None:
    api = start_api(known_lake.root, host="0.0.0.0", allow_anonymous=True)  # answers on 127.0.0.1 too
    code, _, body = api.get(f"/v3/kafka/{CLUSTER}/consumer")
    assert code == 200 and json.loads(body)["consumers"]
