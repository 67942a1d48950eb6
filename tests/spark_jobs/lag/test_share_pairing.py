"""A share group's partition samples take the consumer-group path: routed to the group's lag state,
paired as (committed offset, lag) = (share start offset, share lag) of one cycle."""

from __future__ import annotations

import json

import pandas as pd

from lagwatch.samples import make_sample
from spark_jobs import route
from spark_jobs.lag.pairing import pair_observations
from tests.spark_jobs.test_route import _decoded


def _key(metric: str, kind: str, group: str = "sg") -> str:  # series_key: the labels in SERIES_COLUMNS order
    return json.dumps(["c", "admin", metric, kind, None, "t", "0", group, None])


def test_share_start_offset_and_share_lag_of_one_cycle_are_one_observation() -> None:
    samples = pd.DataFrame(
        [
            {"series_key": _key("share_start_offset", "counter"), "ts": 1, "value": 300.0},
            {"series_key": _key("share_group_lag", "gauge"), "ts": 1, "value": 700.0},
            {"series_key": _key("share_start_offset", "counter"), "ts": 2, "value": 300.0},  # its lag not here yet
        ]
    )
    samples["pkey"] = 42
    paired = pair_observations(samples)
    assert paired[["cluster", "group_id", "topic", "partition", "ts", "committed", "lag"]].values.tolist() == [
        ["c", "sg", "t", 0, 1, 300, 700]
    ]


def test_share_samples_go_to_their_groups_lag_state_like_consumer_group_samples() -> None:
    labels = {"cluster": "prod", "source": "admin", "collector": "c", "ts": 1_700_000_000_000, "value": 1.0}
    share = [
        make_sample(metric="share_start_offset", kind="counter", group_id="sg", topic="t", partition=0, **labels),
        make_sample(metric="share_group_lag", kind="gauge", group_id="sg", topic="t", partition=0, **labels),
        make_sample(metric="consumer_lag", kind="gauge", group_id="sg", topic="t", partition=0, **labels),
    ]
    rows, buckets = route.operator_rows(_decoded([s.to_json() for s in share]), cluster=None, lag_routing=True)
    assert rows.column("role").to_pylist() == [route.LAG] * 3
    assert len(set(buckets.tolist())) == 1  # one group, one bucket
    assert len(set(rows.column("pkey").to_pylist())) == 1  # one partition: the pair key pairs them
