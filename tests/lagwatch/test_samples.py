"""Contract 1: ids are deterministic, keys group an entity, JSON round-trips exactly."""

from __future__ import annotations

import json
from dataclasses import asdict

import pytest

from lagwatch.samples import MEMBER_LABELS, SAMPLE_FIELDS, make_member_sample, make_sample


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
