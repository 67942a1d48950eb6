"""Contract 1: the sample record that travels on the `lagwatch.samples` topic.

One record per measured value. Collectors build them with :func:`make_sample` (and
:func:`make_member_sample` for the membership samples that also name a group member); the Spark
job parses them against :data:`SAMPLE_FIELDS`. The id is a hash of everything that identifies the
measurement, so a retried produce yields the same id and is dropped downstream instead of
counted twice.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

SCHEMA_VERSION = 1
SOURCES: tuple[str, ...] = ("jmx", "prom", "admin", "probe", "heartbeat")
KINDS: tuple[str, ...] = ("counter", "gauge")
#: Labels only a membership sample carries (:class:`MemberSample`); other records leave them out.
MEMBER_LABELS: tuple[str, ...] = ("member_id", "host")

#: Field name -> JSON type accepted, in record order. Labels may be null.
SAMPLE_FIELDS: dict[str, str] = {
    "v": "int",
    "id": "str",
    "ts": "int",
    "cluster": "str",
    "source": "str",
    "collector": "str",
    "metric": "str",
    "kind": "str",
    "value": "float",
    "broker": "str?",
    "topic": "str?",
    "partition": "int?",
    "group_id": "str?",
    "client_id": "str?",
    "member_id": "str?",
    "host": "str?",
}


_encode_string = json.encoder.encode_basestring_ascii  # C-accelerated JSON string quoting


def _q(text: str | None) -> str:
    return "null" if text is None else _encode_string(text)


def _n(number: int | None) -> str:
    return "null" if number is None else str(number)


@dataclass(slots=True)
class Sample:
    """A measured value with its labels; `ts` is epoch milliseconds (UTC).

    Not frozen on purpose: a frozen dataclass's __init__ is much slower, and a big cluster makes
    hundreds of thousands of samples a cycle (docs/performance.md). Treat instances as immutable.
    """

    v: int
    id: str
    ts: int
    cluster: str
    source: str
    collector: str
    metric: str
    kind: str
    value: float
    broker: str | None = None
    topic: str | None = None
    partition: int | None = None
    group_id: str | None = None
    client_id: str | None = None

    def key(self) -> bytes:
        """cluster + source + entity: one entity's samples stay ordered on one partition."""
        return sample_key(
            self.cluster, self.source, self.broker, self.topic, self.partition, self.group_id, self.client_id
        )

    def to_json(self) -> bytes:
        """Compact JSON, written out by hand: json.dumps of a dict is much slower on this hot path."""
        return (
            f'{{"v":{self.v},"id":{_q(self.id)},"ts":{self.ts},"cluster":{_q(self.cluster)},'
            f'"source":{_q(self.source)},"collector":{_q(self.collector)},"metric":{_q(self.metric)},'
            f'"kind":{_q(self.kind)},"value":{self.value!r},"broker":{_q(self.broker)},"topic":{_q(self.topic)},'
            f'"partition":{_n(self.partition)},"group_id":{_q(self.group_id)},"client_id":{_q(self.client_id)}}}'
        ).encode()


def sample_key(
    cluster: str,
    source: str,
    broker: str | None = None,
    topic: str | None = None,
    partition: int | None = None,
    group_id: str | None = None,
    client_id: str | None = None,
) -> bytes:
    entity = "|".join("" if part is None else str(part) for part in (broker, topic, partition, group_id, client_id))
    return f"{cluster}|{source}|{entity}".encode()


def sample_id(cluster: str, source: str, metric: str, ts: int, labels: tuple[object, ...]) -> str:
    """Deterministic id: the same measurement produced twice has the same id."""
    text = f"{cluster}\x1f{source}\x1f{metric}\x1f{ts}" + "".join("\x1f" if x is None else f"\x1f{x}" for x in labels)
    return hashlib.blake2b(text.encode(), digest_size=12).hexdigest()


def make_sample(
    *,
    ts: int,
    cluster: str,
    source: str,
    collector: str,
    metric: str,
    kind: str,
    value: float,
    broker: str | None = None,
    topic: str | None = None,
    partition: int | None = None,
    group_id: str | None = None,
    client_id: str | None = None,
) -> Sample:
    """Build a sample; refuses NaN/inf so a bad reading fails at the source, not in the lake."""
    if source not in SOURCES:
        raise ValueError(f"unknown sample source {source!r}")
    if kind not in KINDS:
        raise ValueError(f"unknown sample kind {kind!r}")
    number = float(value)
    if number - number != 0.0:  # NaN or ±inf (faster than math.isfinite on the hot path)
        raise ValueError(f"{metric}: value {value!r} is not finite")
    labels = (broker, topic, partition, group_id, client_id)
    return Sample(
        SCHEMA_VERSION,
        sample_id(cluster, source, metric, ts, labels),
        int(ts),
        cluster,
        source,
        collector,
        metric,
        kind,
        number,
        None if broker is None else str(broker),
        topic,
        None if partition is None else int(partition),
        group_id,
        client_id,
    )


@dataclass(slots=True)
class MemberSample(Sample):
    """A sample about one consumer-group member: the contract's fields plus `member_id` and `host`.

    Only membership samples (``partition_assigned``) carry the two member labels, so every
    other record, and its cost on the collector's hot path, stays as it was; a reader takes a
    record without them as null. The member labels are the reading, not its identity: a
    partition has one owner per cycle, so the id and the key are the group partition's (the
    key without the client id), and a partition's samples stay in order on one partition of
    the topic whoever owns it.
    """

    member_id: str | None = None
    host: str | None = None

    def key(self) -> bytes:
        return sample_key(self.cluster, self.source, self.broker, self.topic, self.partition, self.group_id)

    def to_json(self) -> bytes:
        member = f',"member_id":{_q(self.member_id)},"host":{_q(self.host)}}}'
        return Sample.to_json(self)[:-1] + member.encode()


def with_member(sample: Sample, member_id: str | None, host: str | None) -> MemberSample:
    """The sample as a membership sample naming that member (same id and fields)."""
    return MemberSample(
        sample.v,
        sample.id,
        sample.ts,
        sample.cluster,
        sample.source,
        sample.collector,
        sample.metric,
        sample.kind,
        sample.value,
        sample.broker,
        sample.topic,
        sample.partition,
        sample.group_id,
        sample.client_id,
        member_id,
        host,
    )


def make_member_sample(*, member_id: str | None, host: str | None, **fields: Any) -> MemberSample:
    """:func:`make_sample` for a membership sample (same checks, same id)."""
    return with_member(make_sample(**fields), member_id, host)
