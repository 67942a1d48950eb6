"""`lagwatch init` writes a starter config that Lagwatch loads as it is: the cluster's security
settings in `[cluster.client]`, secrets named by their variables and never written, the
transport where the operator said, an existing file kept, and no config needed to run it."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from lagwatch import exit_codes
from lagwatch.config import ENV_CLIENT_KEYS, client_env_var, load_config, parse_config
from shell import cli, init

REPO = Path(__file__).resolve().parents[2]
PASSWORD = "pw-that-must-not-be-written"


@pytest.fixture(autouse=True)
def no_lagwatch_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The variables `load_config` merges in would hide what the file itself says."""
    for key in ENV_CLIENT_KEYS:
        monkeypatch.delenv(client_env_var("cluster", key), raising=False)
    monkeypatch.delenv("LAGWATCH_BOOTSTRAP_SERVERS", raising=False)
    monkeypatch.delenv("LAGWATCH_CONFIG", raising=False)


def run_init(*argv: str) -> int:
    """`lagwatch init …` through the CLI's own entry point, without a prompt."""
    return cli.main(["init", "--non-interactive", *argv])


def test_the_real_cli_writes_a_loadable_config_without_needing_one(tmp_path: Path) -> None:
    # A config path that does not exist stops every other command with exit 2 before it starts.
    env = {**os.environ, "PYTHONPATH": str(REPO), "LAGWATCH_CONFIG": str(tmp_path / "missing.toml")}
    flags = ["--bootstrap-servers=kafka1:9092,kafka2:9092", "--jmx=kafka1:9999", "--jmx=kafka2:9999"]
    done = subprocess.run(
        [sys.executable, "-m", "shell.cli", "init", *flags, "--cluster-name=prod-eu"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )
    assert done.returncode == exit_codes.OK, done.stderr
    config = load_config(tmp_path / "config.toml")
    assert (config.cluster.name, config.cluster.bootstrap_servers) == ("prod-eu", "kafka1:9092,kafka2:9092")
    assert config.cluster.client == {"security.protocol": "PLAINTEXT"}
    targets = [(t.broker, t.host, t.port, t.backend) for t in config.cluster.jmx.targets]
    assert targets == [("kafka1", "kafka1", 9999, "jpype"), ("kafka2", "kafka2", 9999, "jpype")]
    # Read as written too: the loader drops a simulated demo target, so only the file shows there is none.
    written = tomllib.loads((tmp_path / "config.toml").read_text())["jmx"]["targets"]
    assert [target["broker"] for target in written] == ["kafka1", "kafka2"]


def test_sasl_ssl_scram_is_written_with_its_variables_and_no_password(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "c.toml"
    code = run_init(
        "--bootstrap-servers=kafka1:9093",
        "--security-protocol=SASL_SSL",
        "--sasl-mechanism=SCRAM-SHA-256",
        "--ssl-ca-location=/etc/ssl/certs/kafka-ca.pem",
        f"--output={path}",
    )
    assert code == exit_codes.OK
    text = path.read_text()
    assert load_config(path).cluster.client == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-256",
        "ssl.ca.location": "/etc/ssl/certs/kafka-ca.pem",
    }
    assert not re.search(r'^\s*"?sasl\.(password|username)"?\s*=', text, re.MULTILINE)
    # The variables the comments name are the ones Lagwatch reads.
    for key in ("sasl.username", "sasl.password"):
        assert client_env_var("cluster", key) in text
    monkeypatch.setenv(client_env_var("cluster", "sasl.username"), "lagwatch-monitor")
    monkeypatch.setenv(client_env_var("cluster", "sasl.password"), PASSWORD)
    client = load_config(path).cluster.client
    assert (client["sasl.username"], client["sasl.password"]) == ("lagwatch-monitor", PASSWORD)
    assert PASSWORD not in path.read_text()


def test_an_existing_file_is_kept_unless_forced(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "config.toml"
    path.write_text("# mine\n")
    assert run_init("--bootstrap-servers=kafka1:9092", f"--output={path}") == exit_codes.BAD_INPUT
    assert str(path) in capsys.readouterr().err
    assert path.read_text() == "# mine\n"
    assert run_init("--bootstrap-servers=kafka1:9092", f"--config={path}", "--force") == exit_codes.OK
    assert load_config(path).cluster.bootstrap_servers == "kafka1:9092"


@pytest.mark.parametrize(
    ("flag", "transport_servers", "topics_on"),
    [("monitored", "", "kafka1:9092"), ("separate:lw1:9092,lw2:9092", "lw1:9092,lw2:9092", "lw1:9092,lw2:9092")],
)
def test_the_transport_is_where_the_operator_said(
    tmp_path: Path, flag: str, transport_servers: str, topics_on: str
) -> None:
    path = tmp_path / "config.toml"
    assert run_init("--bootstrap-servers=kafka1:9092", f"--transport={flag}", f"--output={path}") == exit_codes.OK
    config = load_config(path)
    assert config.transport.bootstrap_servers == transport_servers
    assert config.transport_servers() == topics_on
    # The comment says on which cluster Lagwatch creates its topics, naming them as the config does.
    created_here = re.search(r"Lagwatch creates these topics on (\S+):\n((?:#   .*\n)+)", path.read_text())
    assert created_here is not None
    assert created_here.group(1) == topics_on
    assert topics_named(created_here.group(2)) == {
        config.transport.samples_topic,
        config.collect.coordination_topic,
        config.alert_leader_topic,
    }


def topics_named(comment: str) -> set[str]:
    return {line.split()[1] for line in comment.splitlines()}


def test_missing_bootstrap_servers_without_a_terminal_names_the_flag(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))  # not a TTY
    path = tmp_path / "config.toml"
    assert cli.main(["init", f"--output={path}"]) == exit_codes.BAD_INPUT
    assert "--bootstrap-servers is required" in capsys.readouterr().err
    assert not path.exists()


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["--security-protocol=SASL_SSL"], "--sasl-mechanism is required"),
        (["--sasl-mechanism=PLAIN"], "--sasl-mechanism needs"),
        (["--ssl-ca-location=/ca.pem", "--security-protocol=SASL_PLAINTEXT", "--sasl-mechanism=PLAIN"], "--ssl-ca"),
    ],
)
def test_settings_that_do_not_fit_the_protocol_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], named: str
) -> None:
    path = tmp_path / "config.toml"
    assert run_init("--bootstrap-servers=kafka1:9092", f"--output={path}", *argv) == exit_codes.BAD_INPUT
    assert named in capsys.readouterr().err
    assert not path.exists()


def test_a_terminal_is_asked_only_for_what_is_missing() -> None:
    args = cli.build_parser().parse_args(["init", "--bootstrap-servers=kafka1:9093", "--security-protocol=SASL_SSL"])
    replies = {"SASL mechanism": "scram-sha-512", "JMX": "kafka1:9999, kafka1:9998", "separate cluster": "lw1:9092"}
    asked: list[str] = []

    def ask(question: str, default: str) -> str:
        """What a person types: a reply where one is scripted, else Enter (the default)."""
        asked.append(question)
        return next((reply for start, reply in replies.items() if start in question), default)

    got = init.gather(args, ask)
    assert not any("Bootstrap servers of the cluster" in q or "Security protocol" in q for q in asked)
    assert len(asked) == 5  # name, mechanism, CA, JMX, transport
    assert got.sasl_mechanism == "SCRAM-SHA-512"
    assert got.cluster_name == "main"
    assert got.transport_servers == "lw1:9092"
    # Two endpoints on one host: labelled by position, not by the shared host.
    config = parse_config(tomllib.loads(init.render(got)), environ={})
    assert [(t.broker, t.port) for t in config.cluster.jmx.targets] == [("1", 9999), ("2", 9998)]


def test_oauthbearer_names_its_client_secret_variable(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    argv = ["--bootstrap-servers=kafka1:9093", "--security-protocol=SASL_SSL", "--sasl-mechanism=OAUTHBEARER"]
    assert run_init(*argv, f"--output={path}") == exit_codes.OK
    assert load_config(path).cluster.client["sasl.mechanism"] == "OAUTHBEARER"
    assert client_env_var("cluster", "sasl.oauthbearer.client.secret") in path.read_text()
