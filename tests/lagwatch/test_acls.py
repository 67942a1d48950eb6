"""lagwatch/acls.py: the one table of grants, its names as the code uses them, its commands, and docs/acls.md."""

from __future__ import annotations

from confluent_kafka.admin import AclOperation

from harness.processes import ROOT
from lagwatch import acls
from lagwatch.config import parse_config

DOC = ROOT / "docs" / "acls.md"
STALE = "docs/acls.md is stale: run `python -m lagwatch.acls > docs/acls.md`"


def test_the_doc_is_rendered_from_the_table():
    assert acls.render() == DOC.read_text(encoding="utf-8"), STALE


def test_every_row_of_the_table_is_in_the_doc_with_its_command():
    text = DOC.read_text(encoding="utf-8")
    for need in acls.NEEDS:
        assert need.why in text
        assert f"--operation {need.operation} " in text


def test_every_operation_is_one_kafka_knows():
    for need in acls.NEEDS:
        snake = "".join(f"_{c}" if c.isupper() else c for c in need.operation).lstrip("_").upper()
        assert AclOperation[snake] is not None, need


def test_grants_on_every_name_are_ones_the_check_can_probe():
    """A grant on '*' is probed with a name nobody grants (lagwatch check): only these operations have a probe."""
    probed = {("topic", "Describe"), ("topic", "DescribeConfigs"), ("group", "Describe")}
    for need in acls.NEEDS:
        if need.name == acls.ANY:
            assert (need.resource, need.operation) in probed, need


def test_the_monitored_cluster_is_only_read():
    for need in acls.NEEDS:
        if need.home == "monitored":
            assert need.operation in ("Describe", "DescribeConfigs", "Read"), need


def names(grants: list[acls.Grant]) -> set[tuple[str, str, str, str]]:
    return {(g.need.operation, g.need.resource, g.name, g.level) for g in grants}


def test_features_decide_which_grants_a_config_needs():
    default = parse_config({"cluster": {"name": "prod"}}, environ={})
    monitored = names(acls.grants(default, "monitored"))
    assert ("Read", "topic", "__consumer_offsets", "optional") in monitored  # commit_log = "auto"
    assert ("Describe", "group", "*", "required") in monitored
    transport = names(acls.grants(default, "transport"))
    assert ("Read", "group", "lagwatch.alerts.leader.prod", "required") in transport
    assert ("Describe", "group", "lagwatch-spark-source", "required") in transport
    assert ("Read", "group", "lagwatch-collectors", "required") in transport

    lean = parse_config(
        {
            "cluster": {"name": "prod"},
            "collect": {"commit_log": "off", "coordinate": False},
            "alerts": {"leadership": "none"},
            "spark": {"source": "kafka"},
            "transport": {"samples_topic": "ops.samples"},
        },
        environ={},
    )
    assert not any(name == "__consumer_offsets" for _, _, name, _ in names(acls.grants(lean, "monitored")))
    assert names(acls.grants(lean, "transport")) == {
        ("Create", "topic", "ops.samples", "required"),
        ("Write", "topic", "ops.samples", "required"),
        ("Read", "topic", "ops.samples", "required"),
    }
    on = parse_config({"collect": {"commit_log": "on"}}, environ={})
    assert ("Read", "topic", "__consumer_offsets", "required") in names(acls.grants(on, "monitored"))


def test_the_command_is_what_kafka_acls_takes():
    config = parse_config({}, environ={})
    grant = next(g for g in acls.grants(config, "monitored") if g.need.resource == "group")
    plain = {"bootstrap.servers": "kafka1:9092,kafka2:9092"}
    assert acls.command_for(grant, plain) == (
        "kafka-acls.sh --bootstrap-server kafka1:9092 --add --allow-principal User:ANONYMOUS "
        "--operation Describe --group '*'"
    )
    secured = {**plain, "security.protocol": "SASL_SSL", "sasl.username": "monitor"}
    cluster = next(g for g in acls.grants(config, "monitored") if g.need.resource == "cluster")
    assert acls.command_for(cluster, secured) == (
        "kafka-acls.sh --bootstrap-server kafka1:9092 --command-config admin.properties --add "
        "--allow-principal User:monitor --operation Describe --cluster"
    )
