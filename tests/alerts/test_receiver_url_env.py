"""A receiver's URL from the environment (`url_env`): a Slack or PagerDuty webhook URL is a secret.

The config names the variable, never the URL; the engine reads it when it starts and refuses to
start without it (exit 2 naming the receiver and the variable), while commands that send nothing
(`lagwatch sql`, a backtest) load the same config without it.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from alerts.receivers import RECEIVER_TYPES
from harness import lake_rows
from harness.processes import run_lagwatch
from lagwatch.config import AlertReceiver, ConfigError, parse_config
from lagwatch.lake import ensure_lake

VARIABLE = "LAGWATCH_SLACK_WEBHOOK_URL"
LAG_RULE = {"name": "GroupLagHigh", "metric": "total_lag", "by": ["group_id"], "op": ">", "threshold": 100}


def test_the_engine_sends_to_the_url_the_environment_holds(
    alert_config, engine_for, webhook_receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(VARIABLE, webhook_receiver.url)
    config = alert_config([LAG_RULE], receivers=[{"name": "chat", "type": "slack", "url_env": VARIABLE}])
    assert webhook_receiver.url not in config.model_dump_json(), "the URL is not part of the loaded config"
    t0 = time.time()
    lake_rows.group_status(config.lake.path, t0, "g1", total_lag=400)
    engine_for(config).step(now=t0)

    [request] = webhook_receiver.received()
    assert request.json()["text"] == "[FIRING:1] GroupLagHigh"


def test_the_engine_does_not_start_without_the_variable(
    alert_config, engine_for, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(VARIABLE, raising=False)
    config = alert_config([LAG_RULE], receivers=[{"name": "chat", "type": "slack", "url_env": VARIABLE}])
    expected = f"alerts.receivers 'chat': url_env: set the environment variable {VARIABLE} to the receiver's URL"
    with pytest.raises(ConfigError, match=re.escape(expected)):
        engine_for(config)


def test_alerts_once_exits_2_naming_the_variable_and_sql_runs_without_it(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(
        f'[cluster]\nname = "test"\nbootstrap_servers = "127.0.0.1:9"\n'
        f'[lake]\npath = "{tmp_path / "lake"}"\nduckdb_path = "{tmp_path / "lagwatch.duckdb"}"\n'
        f'[alerts]\nstate_dir = "{tmp_path / "alerts"}"\nleadership = "none"\n'
        f'[[alerts.receivers]]\nname = "chat"\ntype = "slack"\nurl_env = "{VARIABLE}"\n'
    )
    ensure_lake(tmp_path / "lake")
    done = run_lagwatch(config, "alerts", "--once")
    assert done.returncode == 2, done.stderr
    assert f"alerts.receivers 'chat': url_env: set the environment variable {VARIABLE}" in done.stderr

    done = run_lagwatch(config, "sql", "SELECT 1 AS one", "--format", "csv")
    assert done.returncode == 0, done.stderr


def test_an_alertmanager_receiver_url_from_the_environment_gets_the_api_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LAGWATCH_ALERTMANAGER_URL", "http://am.internal:9093/")
    receiver = AlertReceiver(name="am", type="alertmanager", url_env="LAGWATCH_ALERTMANAGER_URL")
    assert RECEIVER_TYPES["alertmanager"].url(receiver) == "http://am.internal:9093/api/v2/alerts"


@pytest.mark.parametrize(
    ("receiver", "error"),
    [
        ({"name": "chat"}, "alerts.receivers 'chat': url: set url = "),
        ({"name": "chat", "url": "http://a/hook", "url_env": VARIABLE}, "alerts.receivers 'chat': set url = "),
        (
            {"name": "chat", "url_env": "https://hooks.slack.com/services/T0/B0/s3cret"},
            "alerts.receivers 'chat': url_env: must be the name of an environment variable",
        ),
    ],
    ids=["neither", "both", "the URL itself"],
)
def test_url_or_url_env_one_of_them(receiver: dict[str, str], error: str) -> None:
    with pytest.raises(ConfigError) as raised:
        parse_config({"alerts": {"receivers": [receiver]}}, environ={})
    assert error in str(raised.value)
    assert "s3cret" not in str(raised.value), "a URL pasted into url_env is never echoed"
