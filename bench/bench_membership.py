"""What membership adds per assigned partition: collector CPU and Spark operator CPU.

Collector: turning DescribeGroups answers (confluent-kafka's own description objects) into
`partition_assigned` samples, and serialising them for the producer (to_json + key), against
the same for the committed offset and lag of a partition (the ≤ 10 µs per offset bar). The
describe request itself was already sent each cycle for the state and member count.

Spark: the operator's lag step (``spark_jobs.lag.step.update_lag``) over a batch of lag pairs, with and
without each partition's owner and each group's readings; the difference per partition is
what membership adds to the stateful operator.
"""

from __future__ import annotations

import time

import pandas as pd
import pyarrow as pa
from confluent_kafka import ConsumerGroupState, Node, TopicPartition
from confluent_kafka.admin import ConsumerGroupDescription, MemberAssignment, MemberDescription

from bench.common import Result
from collectors.admin.samples import LagCounts, NameFilter, group_offset_samples, partition_owner_samples
from collectors.base import SampleFactory
from lagwatch.config import LagConfig
from lagwatch.samples import make_member_sample, make_sample
from lagwatch.vocabulary import Source
from spark_jobs import route
from spark_jobs.lag import step as lag_step
from spark_jobs.schema import PARSED_SAMPLE_SCHEMA

GROUPS, PARTITIONS, MEMBERS = 2_000, 20, 4
MAKE = SampleFactory(cluster="bench", collector="bench")
TS = 1_700_000_000_000


def _description(group: str) -> ConsumerGroupDescription:
    per_member = PARTITIONS // MEMBERS
    members = [
        MemberDescription(
            f"{group}-consumer-{m}-3f1c9a7e-5b2d-4c4e-9f0a-{m:012d}",
            f"{group}-consumer-{m}",
            f"/10.0.{m}.17",
            MemberAssignment(
                [TopicPartition(f"{group}-topic", p) for p in range(m * per_member, (m + 1) * per_member)]
            ),
        )
        for m in range(MEMBERS)
    ]
    return ConsumerGroupDescription(group, False, members, "range", ConsumerGroupState.STABLE, Node(1, "b", 9092))


def _cpu_us_per(count: int, work) -> float:  # type: ignore[no-untyped-def]
    best = float("inf")
    for _ in range(3):
        started = time.process_time()
        work()
        best = min(best, time.process_time() - started)
    return best / count * 1e6


def collector_results() -> list[Result]:
    allowed = NameFilter([".*"], ["^__"])
    descriptions = {f"group-{g}": _description(f"group-{g}") for g in range(GROUPS)}
    offsets = {
        group: [TopicPartition(f"{group}-topic", p, 1_000 + p) for p in range(PARTITIONS)] for group in descriptions
    }
    ends = {(tp.topic, tp.partition): tp.offset + 50 for parts in offsets.values() for tp in parts}
    count = GROUPS * PARTITIONS

    def owners() -> list:  # type: ignore[type-arg]
        return [s for g, d in descriptions.items() for s in partition_owner_samples(g, d, allowed, TS, MAKE)]

    def lag_pairs() -> list:  # type: ignore[type-arg]
        counts = LagCounts()
        return [s for g, p in offsets.items() for s in group_offset_samples(g, p, ends, allowed, TS, MAKE, counts)]

    owner_samples, lag_samples = owners(), lag_pairs()
    assert len(owner_samples) == count and len(lag_samples) == 2 * count
    build_owner, build_lag = _cpu_us_per(count, owners), _cpu_us_per(count, lag_pairs)
    wire_owner = _cpu_us_per(count, lambda: [(s.key(), s.to_json()) for s in owner_samples])
    wire_lag = _cpu_us_per(count, lambda: [(s.key(), s.to_json()) for s in lag_samples])
    note = f"{GROUPS:,} groups × {PARTITIONS} partitions, {MEMBERS} members each; CPU, best of 3"
    return [
        Result("membership: owner samples built per assigned partition", build_owner, "µs", None, note=note),
        Result("membership: owner sample to_json + key per partition", wire_owner, "µs", None, note=note),
        Result("reference: committed offset + lag built per partition", build_lag, "µs", None, note=note),
        Result("reference: committed offset + lag to_json + key per partition", wire_lag, "µs", None, note=note),
    ]


def _row(sample) -> dict:  # type: ignore[no-untyped-def,type-arg]
    return {name: getattr(sample, name, None) for name in PARSED_SAMPLE_SCHEMA.fieldNames() if name != "event_time"}


def _operator_frame(rows: list[dict]) -> pd.DataFrame:  # type: ignore[type-arg]
    table = pa.Table.from_pylist(rows)
    operator, _ = route.operator_rows(table, None, lag_routing=True)
    frame = operator.to_pandas()
    return frame[frame["role"] != route.METRIC]


def spark_results() -> list[Result]:
    groups, cycles = 500, 4
    labels = {"cluster": "bench", "source": Source.ADMIN, "collector": "bench"}
    lag_rows, member_rows = [], []
    for cycle in range(cycles):
        ts = TS + cycle * 15_000
        for g in range(groups):
            group = f"group-{g}"
            for kind, metric, value in (("gauge", "consumer_group_state", 2), ("gauge", "consumer_group_members", 4)):
                member_rows.append(
                    _row(make_sample(ts=ts, metric=metric, kind=kind, value=value, group_id=group, **labels))
                )
            for p in range(PARTITIONS):
                where = {"group_id": group, "topic": f"{group}-topic", "partition": p}
                committed = 1_000 + 10 * cycle
                lag_rows.append(
                    _row(
                        make_sample(
                            ts=ts, metric="committed_offset", kind="counter", value=committed, **where, **labels
                        )
                    )
                )
                lag_rows.append(
                    _row(make_sample(ts=ts, metric="consumer_lag", kind="gauge", value=50, **where, **labels))
                )
                member = p // (PARTITIONS // MEMBERS)
                member_rows.append(
                    _row(
                        make_member_sample(
                            ts=ts, metric="partition_assigned", kind="gauge", value=1, client_id=f"{group}-c{member}",
                            member_id=f"{group}-c{member}-3f1c9a7e", host=f"/10.0.{member}.17", **where, **labels,
                        )
                    )
                )  # fmt: skip
    config = LagConfig(window_s=600)
    with_members, without = _operator_frame(lag_rows + member_rows), _operator_frame(lag_rows)

    def step(frame: pd.DataFrame) -> None:
        lag_step.update_lag(frame, {}, {}, config, 0)

    count = groups * PARTITIONS * cycles
    added = _cpu_us_per(count, lambda: step(with_members)) - _cpu_us_per(count, lambda: step(without))
    note = f"lag step over {count:,} partition observations ({groups} groups × {PARTITIONS} × {cycles} cycles)"
    return [Result("membership: Spark lag step CPU added per partition observation", added, "µs", None, note=note)]


def run() -> list[Result]:
    return collector_results() + spark_results()


if __name__ == "__main__":
    for result in run():
        print(f"{result.name}: {result.figure:.2f} {result.unit} ({result.note})")
