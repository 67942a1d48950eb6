"""The config model refuses what it does not know and names the key and the file."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from lagwatch.config import SECRET_CLIENT_KEYS, ConfigError, client_env_var, load_config, parse_config

REPO = Path(__file__).resolve().parents[2]


def test_shipped_config_is_valid_and_starts_the_embedded_broker() -> None:
    config = load_config(REPO / "config.toml")
    assert config.embedded_broker
    assert config.transport.samples_topic == "lagwatch.samples"
    assert config.collect.interval_s == 15
    assert config.cluster.jmx.targets == [], "the demo's simulated JMX is [demo]'s, not a listed target"
    assert [t.broker for t in config.jmx_targets(config.cluster)] == ["sim-1"]


def test_unknown_key_is_named_with_its_file(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text("[collect]\nintreval_s = 5\n")
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert "collect.intreval_s: unknown key" in str(err.value)
    assert str(path) in str(err.value)


def test_wrong_type_is_named() -> None:
    with pytest.raises(ConfigError, match=r"collect\.interval_s"):
        parse_config({"collect": {"interval_s": "often"}}, "x.toml", environ={})


def test_bad_regex_is_named() -> None:
    with pytest.raises(ConfigError, match=r"collect\.groups_allow.*bad regex"):
        parse_config({"collect": {"groups_allow": ["("]}}, "x.toml", environ={})


def test_secret_in_file_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"sasl\.password.*environment"):
        parse_config({"cluster": {"client": {"sasl.password": "hunter2"}}}, "x.toml", environ={})


def test_secrets_come_from_the_environment_and_security_passes_through() -> None:
    config = parse_config(
        {"cluster": {"bootstrap_servers": "k:9093", "client": {"security.protocol": "SASL_SSL"}}},
        "x.toml",
        environ={"LAGWATCH_CLUSTER_SASL_PASSWORD": "s3cret", "LAGWATCH_CLUSTER_SASL_USERNAME": "mon"},
    )
    from lagwatch.kafka import cluster_client_config

    settings = cluster_client_config(config)
    assert settings["sasl.password"] == "s3cret"
    assert settings["sasl.username"] == "mon"
    assert settings["security.protocol"] == "SASL_SSL"
    assert settings["bootstrap.servers"] == "k:9093"


def test_every_secret_client_key_has_its_environment_variable() -> None:
    """OIDC's client secret and the rest: refused in the file, taken from LAGWATCH_<SECTION>_<KEY>."""
    environ = {
        client_env_var(section, key): f"{section}-{key}"
        for section in ("cluster", "transport")
        for key in SECRET_CLIENT_KEYS
    }
    config = parse_config({"transport": {"bootstrap_servers": "t:9093"}}, "x.toml", environ=environ)
    assert environ["LAGWATCH_CLUSTER_SASL_OAUTHBEARER_CLIENT_SECRET"] == "cluster-sasl.oauthbearer.client.secret"
    for key in SECRET_CLIENT_KEYS:
        assert config.cluster.client[key] == f"cluster-{key}"
        assert config.transport.client[key] == f"transport-{key}"
        with pytest.raises(ConfigError, match=re.escape(key)):
            parse_config({"cluster": {"client": {key: "in-the-file"}}}, "x.toml", environ={})


def test_prometheus_target_needs_url() -> None:
    with pytest.raises(ConfigError, match=r"jmx\.targets\[0\].*url"):
        parse_config({"jmx": {"targets": [{"broker": "1", "backend": "prometheus"}]}}, "x.toml", environ={})


def test_timeout_longer_than_interval_is_refused() -> None:
    with pytest.raises(ConfigError, match="timeout_s"):
        parse_config({"collect": {"interval_s": 5, "timeout_s": 10}}, "x.toml", environ={})


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("[collect]\nintreval_s = 5\n", "collect.intreval_s: unknown key"),
        ("[collect]\ninterval_s = 'often'\n", "collect.interval_s"),
        ("[collect\n", "invalid TOML"),
    ],
)
def test_cli_exits_2_with_a_message_and_no_traceback(tmp_path: Path, content: str, expected: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(content)
    proc = subprocess.run(
        [sys.executable, "-m", "shell.cli", "--config", str(path), "collect", "--once"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert expected in proc.stderr
    assert str(path) in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    ("alerts", "expected"),
    [
        ({"group_wait": "half a minute"}, "alerts.group_wait: bad duration 'half a minute'"),
        ({"rules": [{"name": "R", "metric": "up", "window": "5"}]}, "alerts.rules 'R': window: bad duration '5'"),
        ({"rules": [{"name": "R", "metric": "up", "lookback": "1 h"}]}, "alerts.rules 'R': lookback: bad duration"),
    ],
)
def test_alert_durations_are_checked_when_the_config_loads(alerts: dict, expected: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_config({"alerts": alerts}, "x.toml", environ={})
    assert expected in str(err.value)


def test_durations_keep_their_text_and_an_empty_lookback_means_unset() -> None:
    alerts = parse_config({"alerts": {"rules": [{"name": "R", "metric": "up", "for": "1h30m"}]}}, environ={}).alerts
    assert (alerts.rules[0].for_, alerts.rules[0].lookback) == ("1h30m", "")


def test_commit_log_mode_is_named_with_its_choices() -> None:
    assert parse_config({}, "x.toml", environ={}).collect.commit_log == "auto"
    with pytest.raises(ConfigError, match=r"collect\.commit_log.*'auto', 'on' or 'off'"):
        parse_config({"collect": {"commit_log": "yes"}}, "x.toml", environ={})


# --- whether the shell runs the alert engine: [alerts] run, and the old [dashboard] run_alerts ---
DEPRECATED = "[dashboard] run_alerts is deprecated; use [alerts] run"


def test_alerts_run_is_on_by_default_and_read_from_the_alerts_section(caplog: pytest.LogCaptureFixture) -> None:
    assert parse_config({}, "x.toml", environ={}).alerts.run is True
    assert parse_config({"alerts": {"run": False}}, "x.toml", environ={}).alerts.run is False
    assert DEPRECATED not in caplog.text


def test_legacy_dashboard_run_alerts_sets_alerts_run_and_warns(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "c.toml"
    path.write_text("[dashboard]\nrun_alerts = false\n")
    with caplog.at_level("WARNING", logger="lagwatch.config"):
        config = load_config(path)
    assert config.alerts.run is False
    assert DEPRECATED in caplog.text
    assert "run_alerts" not in config.dashboard.model_dump()


def test_alerts_run_wins_over_legacy_dashboard_run_alerts(caplog: pytest.LogCaptureFixture) -> None:
    data = {"dashboard": {"run_alerts": False}, "alerts": {"run": True}}
    with caplog.at_level("WARNING", logger="lagwatch.config"):
        assert parse_config(data, "x.toml", environ={}).alerts.run is True
    assert DEPRECATED in caplog.text
    assert data == {"dashboard": {"run_alerts": False}, "alerts": {"run": True}}, "the caller's mapping is left as is"


def test_unknown_alerts_key_is_still_refused_beside_the_legacy_key() -> None:
    with pytest.raises(ConfigError) as err:
        parse_config({"dashboard": {"run_alerts": True}, "alerts": {"runn": False}}, "x.toml", environ={})
    assert "alerts.runn: unknown key" in str(err.value)
    with pytest.raises(ConfigError, match=r"alerts\.runs: unknown key"):
        parse_config({"alerts": {"runs": False}}, "x.toml", environ={})
