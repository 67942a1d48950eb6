"""`lagwatch check`, run as an operator runs it (its own process), on real brokers and real sockets.

On the plain broker every check passes. On the SASL_SSL broker with the StandardAuthorizer a
user with no ACL fails, and the output carries one kafka-acls.sh line per grant of
`lagwatch/acls.py`; once exactly those grants are made, the check passes. Local failures
(port in use, a lake that cannot be written, no JDK, a receiver down) are named with their key.
"""

from __future__ import annotations

import re
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import (
    AclOperation,
    AdminClient,
    NewTopic,
    ResourceType,
)

from harness.config_file import section_lines, toml_value
from harness.processes import run_lagwatch
from harness.real_kafka import RealKafkaBroker
from harness.secure_kafka import ADMIN_USER, Acl, SecureKafkaBroker, new_scram_user
from harness.webhook_receiver import WebhookReceiver
from lagwatch import acls, exit_codes
from lagwatch.config import Config, parse_config
from lagwatch.java import JDK_FIX, java_major
from shell.broker import free_port
from shell.check.kafka_checks import release
from shell.check.network_checks import receiver_outcome

CLUSTER = "secured"


def write_config(path: Path, sections: dict[str, dict[str, Any]], **arrays: list[dict[str, Any]]) -> Path:
    """A config.toml: flat sections, then arrays of tables (`jmx.targets`, `alerts.receivers`)."""
    lines = section_lines(sections)
    for name, items in arrays.items():
        for item in items:
            lines += [f"[[{name.replace('__', '.')}]]", *(f"{k} = {toml_value(v)}" for k, v in item.items())]
    path.write_text("\n".join(lines) + "\n")
    return path


def local_sections(tmp_path: Path, unique: Callable[[str], str]) -> dict[str, dict[str, Any]]:
    """Folders under tmp_path, free ports, and Lagwatch's own topics and groups named for this test."""
    return {
        "lake": {"path": str(tmp_path / "lake"), "duckdb_path": str(tmp_path / "lagwatch.duckdb")},
        "spark": {"checkpoint_dir": str(tmp_path / "checkpoints")},
        "alerts": {"state_dir": str(tmp_path / "alerts"), "leader_topic": unique("leader")},
        "dashboard": {"port": free_port()},
        "api": {"port": free_port()},
        "demo": {"jmx_sim_port": free_port()},
        "transport": {"samples_topic": unique("samples")},
        "collect": {"coordination_topic": unique("targets"), "coordination_group": unique("collectors")},
    }


def lines_of(proc: Any, status: str) -> list[str]:
    return [line for line in proc.stdout.splitlines() if line.startswith(f"{status} ")]


@pytest.mark.parametrize("own_transport", [False, True], ids=["transport-on-the-cluster", "transport-of-its-own"])
def test_on_the_real_broker_every_check_passes(
    broker: RealKafkaBroker,
    tmp_path: Path,
    unique: Callable[[str], str],
    webhook_receiver: WebhookReceiver,
    own_transport: bool,
):
    sections = {"cluster": {"name": "test", "bootstrap_servers": broker.bootstrap_servers}}
    sections |= local_sections(tmp_path, unique)
    if own_transport:  # the same broker, named as a transport cluster of its own
        sections["transport"]["bootstrap_servers"] = broker.bootstrap_servers
    jmx = {"broker": "1", "host": "127.0.0.1", "port": broker.jmx_port}
    receiver = {"name": "hook", "url": webhook_receiver.url}
    config = write_config(tmp_path / "config.toml", sections, jmx__targets=[jmx], alerts__receivers=[receiver])

    proc = run_lagwatch(config, "check")

    assert proc.returncode == exit_codes.OK, proc.stdout + proc.stderr
    assert not lines_of(proc, "FAIL"), proc.stdout
    out = proc.stdout
    assert re.search(rf"^PASS cluster test: Kafka .*\(Produce v\d+, Fetch v\d+, Metadata v\d+\), 1 broker at "
                     rf"{broker.bootstrap_servers}$", out, re.M), out  # fmt: skip
    assert re.search(r"^PASS acl test: (all|\d+ of) \d+ grants present for User:ANONYMOUS$", out, re.M), out
    assert re.search(r"^PASS acl transport: \d+ of \d+ grants present for User:ANONYMOUS$", out, re.M), out
    line = "Kafka 4.0 or later" if broker.version >= (4, 0) else "Kafka before 4.0"
    assert f"PASS cluster test: {line} (" in out
    assert (f"PASS cluster transport: {line} (" in out) == own_transport, out
    assert f"PASS jmx test: broker-1@127.0.0.1:{broker.jmx_port} answers at 127.0.0.1:{broker.jmx_port}" in out
    assert re.search(r"^PASS jdk: Java (\d+) at ", out, re.M)
    for key in ("lake.path", "lake.duckdb_path", "spark.checkpoint_dir", "alerts.state_dir", "state"):
        assert f"PASS path {key}: " in out
    assert f"PASS port dashboard.port: 127.0.0.1:{sections['dashboard']['port']} is free" in out
    assert f"PASS receiver hook: webhook at 127.0.0.1:{webhook_receiver.port} accepts connections" in out
    assert webhook_receiver.received() == [], "the check must send no page"
    assert out.splitlines()[-1].endswith(": ready")


def test_local_failures_are_named_with_their_key_and_fail_the_check(
    tmp_path: Path, unique: Callable[[str], str], monkeypatch: pytest.MonkeyPatch
):
    """Embedded broker (nothing to reach), a dashboard port taken, a lake under a file, no JDK, a
    receiver and a JMX target nobody listens on."""
    sections = local_sections(tmp_path, unique)
    not_a_folder = tmp_path / "a-file"
    not_a_folder.write_text("")
    sections["lake"]["path"] = str(not_a_folder / "lake")
    dead = free_port()
    receiver = {"name": "pager", "url": f"http://127.0.0.1:{dead}/hook"}
    jmx = {"broker": "7", "host": "127.0.0.1", "port": dead}
    config = write_config(tmp_path / "config.toml", sections, jmx__targets=[jmx], alerts__receivers=[receiver])
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-jdk"))
    with socket.create_server(("127.0.0.1", sections["dashboard"]["port"])):
        proc = run_lagwatch(config, "check")

    assert proc.returncode == exit_codes.FAILED, proc.stdout + proc.stderr
    out = proc.stdout
    assert "PASS cluster local: the demo broker is embedded" in out
    assert "PASS acl local: the embedded broker has no authorizer" in out
    assert "PASS jmx local: broker-sim-1@" in out  # the demo's simulated target
    port = sections["dashboard"]["port"]
    assert f"FAIL port dashboard.port: 127.0.0.1:{port} is in use — stop what listens there" in out
    assert f"FAIL path lake.path: {not_a_folder / 'lake'} is not writable (Not a directory)" in out
    assert f"FAIL jdk: no java found (looked in JAVA_HOME={tmp_path / 'no-jdk'}) — {JDK_FIX}" in out
    assert f"FAIL receiver pager: webhook at 127.0.0.1:{dead}: cannot connect (Connection refused)" in out
    assert f"FAIL jmx local: broker-7@127.0.0.1:{dead}: cannot connect to 127.0.0.1:{dead} (Connection refused)" in out
    assert len(lines_of(proc, "FAIL")) == 5, out
    assert "PASS path alerts.state_dir" in out and "PASS port api.port" in out
    assert out.splitlines()[-1] == "lagwatch check: 5 FAIL, 9 PASS: fix the FAIL lines above"


def test_java_versions_and_kafka_lines_are_read_from_what_the_tools_print():
    assert java_major('openjdk version "17.0.2" 2022-01-18') == 17
    assert java_major('java version "1.8.0_392"') == 8
    assert java_major('openjdk version "21" 2023-09-19') == 21
    assert java_major("no version here") is None
    assert (
        release({2: (1, 11), 0: (0, 13), 1: (4, 18), 3: (0, 13)})
        == "Kafka 4.0 or later (Produce v13, Fetch v18, Metadata v13)"
    )
    assert release({2: (0, 9), 1: (0, 16)}) == "Kafka before 4.0 (Fetch v16)"


# -- the secured broker: SASL_SSL, SCRAM-SHA-512, StandardAuthorizer -----------------------


def table_acls(config: Config) -> list[Acl]:
    """Exactly the bindings `lagwatch/acls.py` lists for this config, both homes (one cluster carries both)."""
    kinds = {"cluster": ResourceType.BROKER, "topic": ResourceType.TOPIC, "group": ResourceType.GROUP}
    found = []
    for home in ("monitored", "transport"):
        for grant in acls.grants(config, home):
            operation = AclOperation["".join(f"_{c}" if c.isupper() else c for c in grant.need.operation)[1:].upper()]
            found.append(Acl(kinds[grant.need.resource], grant.name, operation))
    return found


@pytest.mark.slow
def test_on_the_secured_broker_a_user_without_acls_is_told_each_grant_then_passes_once_granted(
    secure_broker: SecureKafkaBroker, tmp_path: Path, unique: Callable[[str], str], monkeypatch: pytest.MonkeyPatch
):
    user, password = new_scram_user(secure_broker, unique("lagwatch"))
    monkeypatch.setenv("LAGWATCH_CLUSTER_SASL_USERNAME", user)
    monkeypatch.setenv("LAGWATCH_CLUSTER_SASL_PASSWORD", password)
    cluster = {"name": CLUSTER, "bootstrap_servers": secure_broker.bootstrap_servers,
               "client": secure_broker.security_settings()}  # fmt: skip
    sections = {"cluster": cluster, **local_sections(tmp_path, unique)}
    config_file = write_config(tmp_path / "config.toml", sections)
    config = parse_config(sections, environ={"LAGWATCH_CLUSTER_SASL_USERNAME": user})
    settings = {"bootstrap.servers": secure_broker.bootstrap_servers, **secure_broker.security_settings(),
                "sasl.username": user}  # fmt: skip

    refused = run_lagwatch(config_file, "check")

    assert refused.returncode == exit_codes.FAILED, refused.stdout + refused.stderr
    out = refused.stdout
    assert re.search(rf"^PASS cluster {CLUSTER}: Kafka .*, 1 broker at ", out, re.M), out
    assert (
        f"FAIL acl {CLUSTER}: missing Describe on group '*' for User:{user} — run: kafka-acls.sh --bootstrap-server "
        f"{secure_broker.bootstrap_servers} --command-config admin.properties --add --allow-principal User:{user} "
        "--operation Describe --group '*'"
    ) in out
    for home, label in (("monitored", CLUSTER), ("transport", "transport")):
        for grant in acls.grants(config, home):
            status = "FAIL" if grant.level == "required" else "WARN"
            assert f"{status} acl {label}: missing {grant.label} for User:{user}" in out, grant
            assert f"run: {acls.command_for(grant, settings)}" in out, grant
    wanted = table_acls(config)
    assert len(lines_of(refused, "FAIL")) + len(lines_of(refused, "WARN")) == len(wanted)
    # Started anyway, the collector stops at its first refused request and says which grant it lacks.
    collect = run_lagwatch(config_file, "collect", "--once")
    assert collect.returncode == exit_codes.KAFKA_UNREACHABLE, collect.stdout + collect.stderr
    samples_topic = sections["transport"]["samples_topic"]
    assert f"refused to create topic {samples_topic!r}" in collect.stderr and "lagwatch check" in collect.stderr

    secure_broker.grant(user, wanted)
    granted = run_lagwatch(config_file, "check")

    assert granted.returncode == exit_codes.OK, granted.stdout + granted.stderr
    assert not lines_of(granted, "FAIL") and not lines_of(granted, "WARN"), granted.stdout
    assert f"PASS acl {CLUSTER}: all " in granted.stdout
    # Lagwatch's topics do not exist yet: Create was checked, their Read and Write wait for them.
    assert re.search(rf"^SKIP acl transport: topic {sections['transport']['samples_topic']} does not exist yet: "
                     "Write and Read on it cannot be checked", granted.stdout, re.M), granted.stdout  # fmt: skip

    admin = AdminClient(secure_broker.client_settings(ADMIN_USER))
    own = [sections["transport"]["samples_topic"], sections["collect"]["coordination_topic"],
           sections["alerts"]["leader_topic"]]  # fmt: skip
    for future in admin.create_topics([NewTopic(topic, 1, 1) for topic in own]).values():
        future.result(30)
    made = run_lagwatch(config_file, "check")

    assert made.returncode == exit_codes.OK, made.stdout + made.stderr
    assert (
        f"PASS acl transport: all {len(acls.grants(config, 'transport'))} grants present for User:{user}" in made.stdout
    )
    assert not [line for line in made.stdout.splitlines() if line.startswith("SKIP acl")], made.stdout


@pytest.mark.slow
def test_a_refused_login_is_named_with_its_fix(
    secure_broker: SecureKafkaBroker, tmp_path: Path, unique: Callable[[str], str], monkeypatch: pytest.MonkeyPatch
):
    user, _ = new_scram_user(secure_broker, unique("lagwatch"))
    monkeypatch.setenv("LAGWATCH_CLUSTER_SASL_USERNAME", user)
    monkeypatch.setenv("LAGWATCH_CLUSTER_SASL_PASSWORD", "not-the-password")
    cluster = {"name": CLUSTER, "bootstrap_servers": secure_broker.bootstrap_servers,
               "client": secure_broker.security_settings()}  # fmt: skip
    config = write_config(tmp_path / "config.toml", {"cluster": cluster, **local_sections(tmp_path, unique)})

    proc = run_lagwatch(config, "check")

    assert proc.returncode == exit_codes.FAILED, proc.stdout + proc.stderr
    refused = (
        rf"^FAIL cluster {CLUSTER}: Kafka at '{secure_broker.bootstrap_servers}' refused the connection: "
        r"authentication failed .* — check sasl.mechanism in \[cluster\] client, and the login in "
        "LAGWATCH_CLUSTER_SASL_USERNAME / LAGWATCH_CLUSTER_SASL_PASSWORD$"
    )
    assert re.search(refused, proc.stdout, re.M), proc.stdout
    assert f"SKIP acl {CLUSTER}: not checked: cluster {CLUSTER} did not answer" in proc.stdout


def test_a_receiver_url_from_the_environment_is_checked_where_it_points(
    webhook_receiver: WebhookReceiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    receivers = [{"name": "chat", "type": "slack", "url_env": "LAGWATCH_TEST_CHAT_URL"}]
    config = parse_config({"alerts": {"receivers": receivers}}, environ={})
    [receiver] = config.alerts.receivers

    monkeypatch.delenv("LAGWATCH_TEST_CHAT_URL", raising=False)
    unset = receiver_outcome(receiver)
    assert (unset.status, unset.fix) == ("FAIL", "export LAGWATCH_TEST_CHAT_URL where Lagwatch runs"), unset

    monkeypatch.setenv("LAGWATCH_TEST_CHAT_URL", webhook_receiver.url)
    assert receiver_outcome(receiver).status == "PASS"
