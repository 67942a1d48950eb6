"""Contract 1: ids are deterministic, keys group an entity, JSON round-trips exactly."""

from __future__ import annotations

import json
from dataclasses import asdict

import pytest

from lagwatch.samples import MEMBER_LABELS, SAMPLE_FIELDS, MetricSamples, label_text, make_member_sample, make_sample


def _sample(**overrides: object):  # type: ignore[no-untyped-def]
    fields = dict(
        ts=1_700_000_000_000,
        cluster="prod",
        source="admin",
        collector="c-1",
        metric="consumer_lag",
        kind="gauge",
        value=42.0,
        group_id="billing",
        topic="orders",
        partition=3,
    )
    fields.update(overrides)
    return make_sample(**fields)  # type: ignore[arg-type]


def test_same_measurement_same_id_and_any_label_changes_it() -> None:
    assert _sample().id == _sample(collector="other-instance", value=7.0).id  # a retry of the same reading
    ids = {_sample(**change).id for change in ({}, {"partition": 4}, {"ts": 1}, {"group_id": "x"}, {"metric": "m"})}
    assert len(ids) == 5


def test_key_is_cluster_source_entity() -> None:
    assert _sample().key() == b"prod|admin||orders|3|billing|"
    assert _sample(value=1.0, ts=5).key() == _sample().key()


def test_json_round_trips_with_every_contract_field() -> None:
    sample = _sample(cluster='we"ird\\name', client_id="ünïcode")
    decoded = json.loads(sample.to_json())
    assert decoded == asdict(sample)
    assert list(decoded) == [name for name in SAMPLE_FIELDS if name not in MEMBER_LABELS]


def test_member_sample_adds_the_member_labels_to_json_and_keeps_the_partition_id_and_key() -> None:
    fields = dict(ts=1, cluster="prod", source="admin", collector="c-1", metric="partition_assigned", kind="gauge")
    labels = dict(value=1, group_id="billing", topic="orders", partition=3, client_id="app-1")
    sample = make_member_sample(member_id="app-1-4f2a", host="/10.0.0.7", **fields, **labels)
    decoded = json.loads(sample.to_json())
    assert decoded == asdict(sample) and list(decoded) == list(SAMPLE_FIELDS)
    assert (decoded["member_id"], decoded["host"]) == ("app-1-4f2a", "/10.0.0.7")
    retried = make_member_sample(member_id="app-1-4f2a", host="/10.0.0.7", **fields, **labels)
    assert retried.id == sample.id == make_sample(**fields, **labels).id, "one owner per partition and cycle"
    later = {**fields, "ts": 2}
    assert sample.id != make_member_sample(member_id="app-1-4f2a", host="/10.0.0.7", **later, **labels).id
    other = make_member_sample(member_id="app-1-9c01", host="/10.0.0.7", **fields, **labels)
    assert sample.key() == other.key() == b"prod|admin||orders|3|billing|", "a new owner stays in order"


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
def test_non_finite_values_are_refused_at_the_source(bad: float) -> None:
    with pytest.raises(ValueError, match="not finite"):
        _sample(value=bad)


def test_unknown_source_or_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="source"):
        _sample(source="snmp")
    with pytest.raises(ValueError, match="kind"):
        _sample(kind="histogram")


#: Ids, keys and JSON of these measurements as the first collectors wrote them. An id that
#: changed would make a replayed sample count twice, so any change here is a contract break.
PINNED = [
    (
        dict(metric="consumer_lag", kind="gauge", value=42.0, group_id="billing", topic="orders", partition=3),
        "e83b536ba5ce7a5eaff48636",
        b"prod|admin||orders|3|billing|",
    ),
    (
        dict(metric="log_end_offset", kind="counter", value=7, topic="orders", partition=0),
        "f067a50ea7938a47ddb7a13f",
        b"prod|admin||orders|0||",
    ),
    (
        dict(ts=5, cluster="c", source="jmx", collector="x", metric="messages_in_total", kind="counter", value=1.5,
             broker="1"),
        "8e90c2a532fc845de9fabb46",
        b"c|jmx|1||||",
    ),
    (
        dict(ts=5, cluster="c", source="heartbeat", collector="x", metric="up", kind="gauge", value=1,
             client_id="ünï\u001fcode", topic=""),
        "2d3ebefb66f2c2334fa4356f",
        "c|heartbeat|||||ünï\u001fcode".encode(),
    ),
    (
        dict(ts=1_700_000_000_123, cluster='we"ird', source="admin", collector="x", metric="consumer_group_state",
             kind="gauge", value=2, group_id="g|1"),
        "b63b1346526d2aaeb2f300dc",
        b'we"ird|admin||||g|1|',
    ),
]  # fmt: skip


@pytest.mark.parametrize(("fields", "sample_id", "key"), PINNED)
def test_ids_and_keys_are_exactly_the_ones_written_before(fields: dict, sample_id: str, key: bytes) -> None:
    sample = _sample(**{"group_id": None, "topic": None, "partition": None, **fields})
    assert sample.id == sample_id
    assert sample.key() == key
    assert json.loads(sample.to_json()) == asdict(sample)


@pytest.mark.parametrize(("fields", "sample_id", "key"), PINNED)
def test_metric_samples_make_the_very_samples_make_sample_does(fields: dict, sample_id: str, key: bytes) -> None:
    fields = {**dict(ts=1_700_000_000_000, cluster="prod", source="admin", collector="c-1"), **fields}
    labels = {name: fields.pop(name, None) for name in ("broker", "topic", "partition", "group_id", "client_id")}
    value = fields.pop("value")

    sample = MetricSamples(**fields)(value, label_text(*labels.values()), *labels.values())

    assert sample == make_sample(**fields, value=value, **labels)
    assert (sample.id, sample.key()) == (sample_id, key)


def test_metric_samples_refuse_what_make_sample_refuses() -> None:
    with pytest.raises(ValueError, match="kind"):
        MetricSamples(ts=1, cluster="c", source="admin", collector="x", metric="m", kind="histogram")
    lag = MetricSamples(ts=1, cluster="c", source="admin", collector="x", metric="consumer_lag", kind="gauge")
    with pytest.raises(ValueError, match="consumer_lag: value nan is not finite"):
        lag(float("nan"), label_text())
