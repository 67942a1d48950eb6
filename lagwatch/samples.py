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

from lagwatch.vocabulary import SOURCES

SCHEMA_VERSION = 1
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


_quote = json.encoder.encode_basestring_ascii  # C-accelerated JSON string quoting


@dataclass(slots=True)
class Sample:
    """A measured value with its labels; `ts` is epoch milliseconds (UTC).

    Not frozen on purpose: a frozen dataclass's __init__ is much slower, and a big cluster makes
    hundreds of thousands of samples a cycle (bench/RECORDS.md). Treat instances as immutable.
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
            f'{{"v":{self.v},"id":{_quote(self.id)},"ts":{self.ts},"cluster":{_quote(self.cluster)},'
            f'"source":{_quote(self.source)},"collector":{_quote(self.collector)},"metric":{_quote(self.metric)},'
            f'"kind":{_quote(self.kind)},"value":{self.value!r},'
            f'"broker":{"null" if self.broker is None else _quote(self.broker)},'
            f'"topic":{"null" if self.topic is None else _quote(self.topic)},'
            f'"partition":{"null" if self.partition is None else self.partition},'
            f'"group_id":{"null" if self.group_id is None else _quote(self.group_id)},'
            f'"client_id":{"null" if self.client_id is None else _quote(self.client_id)}}}'
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
    return (
        f"{cluster}|{source}|{'' if broker is None else broker}|{'' if topic is None else topic}|"
        f"{'' if partition is None else partition}|{'' if group_id is None else group_id}|"
        f"{'' if client_id is None else client_id}"
    ).encode()


def id_prefix(cluster: str, source: str, metric: str, ts: int) -> str:
    """The measurement's part of the hashed id text (the labels' part follows it)."""
    return f"{cluster}\x1f{source}\x1f{metric}\x1f{ts}"


def label_text(
    broker: object = None,
    topic: object = None,
    partition: object = None,
    group_id: object = None,
    client_id: object = None,
) -> str:
    """The labels' part of the hashed id text: each label after a unit separator, None as empty."""
    return (
        f"\x1f{'' if broker is None else broker}\x1f{'' if topic is None else topic}"
        f"\x1f{'' if partition is None else partition}\x1f{'' if group_id is None else group_id}"
        f"\x1f{'' if client_id is None else client_id}"
    )  # fmt: skip


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode(), digest_size=12).hexdigest()


def sample_id(cluster: str, source: str, metric: str, ts: int, labels: tuple[object, ...]) -> str:
    """Deterministic id: the same measurement produced twice has the same id."""
    return _digest(id_prefix(cluster, source, metric, ts) + label_text(*labels))


def _checked(source: str, kind: str) -> None:
    if source not in SOURCES:
        raise ValueError(f"unknown sample source {source!r}")
    if kind not in KINDS:
        raise ValueError(f"unknown sample kind {kind!r}")


def _finite(metric: str, value: float) -> float:
    number = float(value)
    if number - number != 0.0:  # NaN or ±inf (faster than math.isfinite on the hot path)
        raise ValueError(f"{metric}: value {value!r} is not finite")
    return number


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
    _checked(source, kind)
    number = _finite(metric, value)
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


class MetricSamples:
    """make_sample for many samples of one metric, source and timestamp (a cycle's committed
    offsets, say): the checks and the id's prefix are done once, and the caller passes each
    entity's :func:`label_text` in, computed once for all the metrics of that entity.

    Same samples, ids included, as make_sample with the same arguments; labels must already
    have their types (broker str, partition int).
    """

    __slots__ = ("_prefix", "cluster", "collector", "kind", "metric", "source", "ts")

    def __init__(self, *, ts: int, cluster: str, source: str, collector: str, metric: str, kind: str) -> None:
        _checked(source, kind)
        self.ts, self.cluster, self.source, self.collector = int(ts), cluster, source, collector
        self.metric, self.kind = metric, kind
        self._prefix = id_prefix(cluster, source, metric, ts)

    def __call__(self, value: float, labels: str, *entity: str | int | None) -> Sample:
        """`entity`: the label values in :data:`LABELS` order (broker, topic, partition, group_id,
        client_id; trailing ones may be left out), `labels` their :func:`label_text`."""
        number = float(value)
        if number - number != 0.0:
            _finite(self.metric, value)  # raises, naming the metric
        identity = hashlib.blake2b((self._prefix + labels).encode(), digest_size=12).hexdigest()
        return Sample(SCHEMA_VERSION, identity, self.ts, self.cluster, self.source, self.collector, self.metric,
                      self.kind, number, *entity)  # fmt: skip


@dataclass(slots=True)
class MemberSample(Sample):
    """A sample about one consumer-group member: the contract's fields plus `member_id` and `host`.

    Only membership samples (``partition_assigned``, ``partition_pending``,
    ``consumer_group_member_epoch``) carry the two member labels, so every
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
        member_id = "null" if self.member_id is None else _quote(self.member_id)
        host = "null" if self.host is None else _quote(self.host)
        member = f',"member_id":{member_id},"host":{host}}}'
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
