"""Decoded samples → the stateful operator's input: per state bucket, its rows packed in one cell.

``rollups.py`` runs one stateful operator keyed by bucket (STATE_BUCKETS of them). This module
decides each record's bucket and role and packs each bucket's rows as one Arrow cell
(``packed.py`` says why), before the exchange: in the bundled Kafka source's reader, or in
``mapInArrow`` (:func:`routed`) after Spark's native source:

- a metric sample goes to its series' bucket (``pmod(sid, STATE_BUCKETS)``);
- a lag sample (``committed_offset`` / ``consumer_lag`` of a group's partition, from the admin
  collector's cycle or the commit log, or the group's ``consumer_group_state`` /
  ``consumer_group_members`` from either) goes to its group's bucket, where the group's lag and membership
  state and the sample's metric windows all live;
- a member sample (``partition_assigned`` or ``partition_pending`` from the admin collector or the
  commit log, which names the partition's owner or the member it is assigned to) goes to its
  group's bucket too, for the membership state only: it has no metric windows, since the
  metrics tables have no member columns (its values are lag_1m's owner columns);
- a dead letter (``error`` set) goes to a bucket by its offset and passes the state untouched;
- with lag routing, a broker event sample (``lagwatch.vocabulary.BROKER_EVENTS``, without a
  topic label) goes to its series' bucket as a metric sample AND, as a BROKER copy, to every
  bucket: each group's status reason names the broker events of its cluster
  (``lag/broker_events.py``), and groups live in every bucket. They are a handful per broker and
  cycle, so the 16 copies cost little;
- with lag routing, a topic's retention settings (``lagwatch.vocabulary.RETENTION_METRICS``) go
  to their series' bucket as metric samples AND, as TOPIC copies, to every bucket: every group
  reading the topic judges its retention margin by them (``lag/retention.py``). Three samples
  per topic, sent when the collector reads them (a new topic, then every refresh), not every cycle;
- with lag routing, the admin collector's ``up`` sample (one per cluster and cycle: 0 when the
  cycle failed and read no offsets) goes to its series' bucket as a metric sample AND, as a
  CLUSTER copy, to every bucket: a cluster that cannot be read turns every group of it ERR, and
  its groups live in every bucket (``lag/reachability.py``).

Each routed row also carries the newest event time of its samples (NULL when it holds only
dead letters) and its record count (BROKER, TOPIC and CLUSTER copies not counted: progress counts Kafka records
by it): Spark's watermark is the maximum of that column, which equals the maximum over
the samples, so the watermark is exactly what it was when every sample was a row.

The hashes are Spark's own ``xxhash64`` (seed 42), computed once per distinct series of a
batch: the series id and the bucket key the state of existing checkpoints, so they must not
change. ``tests/spark_jobs/test_route.py`` checks them against Spark.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator, Sequence
from functools import partial
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import xxhash

from lagwatch.membership import GROUP_METRICS, MEMBER_METRICS
from lagwatch.vocabulary import BROKER_EVENT_METRICS, RETENTION_METRICS, TARGET_SOURCES, Source, require
from spark_jobs import packed
from spark_jobs.lag.pairing import LAG_METRICS, LAG_SOURCES
from spark_jobs.schema import DEAD_LETTER_COLUMNS
from spark_jobs.windows import SERIES_COLUMNS

(UP_METRIC,) = require("up")
#: Fixed for the life of a checkpoint (the state is keyed by bucket). Each bucket is one Python
#: call per micro-batch doing vectorised work for all its series/groups.
STATE_BUCKETS = 16
#: Each row's role in the operator: a LAG sample feeds its group's lag state and, like a METRIC
#: sample, its own metric windows; a MEMBER sample feeds only its group's membership state; a DEAD
#: letter is written as it is; a BROKER copy of a broker event sample feeds its bucket's broker
#: event state only; a TOPIC copy of a topic retention sample feeds its bucket's retention state only;
#: a CLUSTER copy of the admin collector's `up` sample feeds its bucket's cluster reachability state only.
METRIC, LAG, DEAD, MEMBER, BROKER, TOPIC, CLUSTER = 0, 1, 2, 3, 4, 5, 6
#: The roles of copies sent to every bucket (not counted as records: each is a copy of one).
COPIES = (BROKER, TOPIC, CLUSTER)
#: A series that is copied to no bucket (SeriesRoutes.copy_role).
NO_COPY = -1
#: The rows one packed cell of the operator's input holds.
OPERATOR_SCHEMA = pa.schema(
    [
        pa.field("role", pa.int8()),
        pa.field("sid", pa.int64()),  # the series id (state key inside the bucket)
        pa.field("pkey", pa.int64()),  # a lag sample's (cluster, group, topic, partition), for pairing; else 0
        pa.field("ts", pa.int64()),
        pa.field("value", pa.float64()),
        pa.field("series_key", pa.string()),  # the series labels as a JSON array, SERIES_COLUMNS order
        pa.field("dead_letter", pa.string()),  # a dead letter's fields as a JSON object, else NULL
        pa.field("member_id", pa.string()),  # a member sample's member labels, else NULL
        pa.field("host", pa.string()),
    ]
)
#: Spark's schema of the routed frame (``mapInArrow`` output).
ROUTED_DDL = "bucket bigint, event_time timestamp, records bigint, samples binary"
_ROUTED_SCHEMA = pa.schema(
    [
        pa.field("bucket", pa.int64()),
        pa.field("event_time", pa.timestamp("us", tz="UTC")),
        pa.field("records", pa.int64()),  # how many records the cell holds (progress counts them)
        pa.field("samples", pa.binary()),
    ]
)
_SPARK_SEED = 42
_SEPARATOR = "\u001f"
_NULL = "\u0000"
#: A label JSON must escape (RE2 syntax).
_NEEDS_ESCAPE = r'["\\\x00-\x1f]'


def routed(samples: Any, cluster: str | None, lag_routing: bool) -> Any:
    """A packed frame of decoded samples (``packed.PACKED_DDL``) → its ROUTED_DDL frame."""
    return samples.mapInArrow(partial(route_batches, cluster=cluster, lag_routing=lag_routing), ROUTED_DDL)


def route_batches(
    batches: Iterable[pa.RecordBatch], cluster: str | None, lag_routing: bool
) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` function: packed decoded samples → ROUTED_DDL rows, one per bucket present."""
    for batch in batches:
        cells = packed.packed_cells(batch)
        if cells:
            yield route(packed.unpack(cells), cluster, lag_routing)


def route(samples: pa.Table, cluster: str | None, lag_routing: bool) -> pa.RecordBatch:
    """One ROUTED_DDL row per bucket the samples fall in: (bucket, newest event time, record count,
    packed rows).

    ``samples`` has the sample's columns (decode.DECODED_SCHEMA, or spark_jobs.schema's
    PARSED_SAMPLE_SCHEMA); ``cluster`` names a record that cannot tell its own.

    The packed rows are LZ4-compressed: the JVM moves far fewer bytes through the exchange, for
    less CPU than it saves (bench/RECORDS.md).
    """
    rows, buckets = operator_rows(samples, cluster, lag_routing)
    order = np.argsort(buckets, kind="stable")
    rows, buckets = rows.take(order), buckets[order]
    starts = np.flatnonzero(np.r_[True, buckets[1:] != buckets[:-1]])
    ends = np.r_[starts[1:], len(buckets)]
    live = pc.not_equal(rows.column("role"), DEAD)
    newest = [pc.max(pc.filter(rows.column("ts")[s:e], live[s:e])).as_py() for s, e in zip(starts, ends, strict=True)]
    counted = ~np.isin(rows.column("role").to_numpy(), COPIES)
    records = np.add.reduceat(counted, starts) if len(starts) else starts
    return pa.RecordBatch.from_arrays(
        [
            pa.array(buckets[starts], pa.int64()),
            pa.array([None if ms is None else ms * 1000 for ms in newest], pa.int64()).cast(_ROUTED_SCHEMA[1].type),
            pa.array(records, pa.int64()),
            pa.array(
                [packed.pack_bytes(rows.slice(s, e - s), "lz4") for s, e in zip(starts, ends, strict=True)], pa.binary()
            ),
        ],
        schema=_ROUTED_SCHEMA,
    )


def operator_rows(samples: pa.Table, cluster: str | None, lag_routing: bool) -> tuple[pa.Table, np.ndarray]:
    """(OPERATOR_SCHEMA rows, each row's bucket): the first ``samples.num_rows`` aligned with
    ``samples``, then, with lag routing, STATE_BUCKETS copies (BROKER, TOPIC, CLUSTER) of each broker
    event, topic retention and admin `up` sample."""
    samples = samples.combine_chunks()
    if cluster is not None:
        samples = samples.set_column(
            samples.schema.get_field_index("cluster"), "cluster", pc.fill_null(samples.column("cluster"), cluster)
        )
    codes, series = _distinct_series(samples)
    routes = _series_routes(series, lag_routing)
    dead = _dead_mask(samples)
    roles = np.where(dead, DEAD, routes.role[codes]).astype(np.int8)
    buckets = routes.bucket[codes]
    dead_letter = pa.nulls(samples.num_rows, pa.string())
    if dead.any():
        offsets = samples.column("source_offset").to_numpy(zero_copy_only=False)[dead]
        buckets[dead] = np.mod(np.nan_to_num(offsets).astype(np.int64), STATE_BUCKETS)
        dead_letter = _dead_letter_texts(samples, dead)
    rows = pa.Table.from_arrays(
        [
            pa.array(roles),
            pa.array(routes.sid[codes]),
            pa.array(routes.pkey[codes]),
            samples.column("ts").cast(pa.int64()),
            samples.column("value").cast(pa.float64()),
            routes.series_key.take(pa.array(codes)),
            dead_letter,
            *[_member_label(samples, name) for name in ("member_id", "host")],
        ],
        schema=OPERATOR_SCHEMA,
    )
    buckets = buckets.astype(np.int64)
    if lag_routing:
        copy_role = np.where(dead, NO_COPY, routes.copy_role[codes])
        return _with_copies(rows, buckets, np.flatnonzero(copy_role != NO_COPY), copy_role)
    return rows, buckets


def _with_copies(
    rows: pa.Table, buckets: np.ndarray, copied: np.ndarray, copy_role: np.ndarray
) -> tuple[pa.Table, np.ndarray]:
    """``rows`` and ``buckets`` followed by a copy of each row in ``copied`` for every bucket,
    with the row's ``copy_role`` (BROKER, TOPIC or CLUSTER) as its role."""
    if not len(copied):
        return rows, buckets
    repeated = np.repeat(copied, STATE_BUCKETS)
    copies = rows.take(pa.array(repeated))
    copies = copies.set_column(0, "role", pa.array(copy_role[repeated].astype(np.int8)))
    copy_buckets = np.tile(np.arange(STATE_BUCKETS, dtype=np.int64), len(copied))
    return pa.concat_tables([rows, copies]).combine_chunks(), np.concatenate([buckets, copy_buckets])


class SeriesRoutes(NamedTuple):
    """Per distinct series of a batch, in the order of its codes."""

    sid: np.ndarray
    bucket: np.ndarray
    pkey: np.ndarray
    role: np.ndarray
    series_key: pa.Array
    #: the role of the series' copies to every bucket: BROKER for a broker event metric
    #: (``lag/broker_events.py``), TOPIC for a topic retention setting (``lag/retention.py``), CLUSTER
    #: for a cluster's admin collector `up` (``lag/reachability.py``), else NO_COPY
    copy_role: np.ndarray


def _distinct_series(samples: pa.Table) -> tuple[np.ndarray, pa.Table]:
    """Each row's series code, and per distinct series its labels and `text`, the form Spark hashes.

    The text is ``concat_ws(U+001F, coalesce(cast(label as string), U+0000) …)`` over
    SERIES_COLUMNS, the form whose xxhash64 is the series id in existing checkpoints.
    """
    parts = [pc.fill_null(samples.column(name).cast(pa.string()), _NULL) for name in SERIES_COLUMNS]
    encoded = pc.binary_join_element_wise(*parts, _SEPARATOR).combine_chunks().dictionary_encode()
    codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.intp)
    _, first = np.unique(codes, return_index=True)  # codes are 0…k-1: first row of each series
    distinct = samples.select(list(SERIES_COLUMNS)).take(pa.array(first))
    return codes, distinct.append_column("text", encoded.dictionary)


def _series_routes(series: pa.Table, lag_routing: bool) -> SeriesRoutes:
    """sid, bucket, pkey and role (numpy arrays) and series_key (Arrow strings) per distinct series.

    Vectorised but for one xxhash call per series (and three per lag series): a batch of a
    live cluster holds about as many series as samples. The sid is ``spark_hash`` of one
    string, inlined: the general function's per-call cost showed in the profile.
    """
    texts = series.column("text").cast(pa.binary()).to_pylist()
    sid = np.fromiter((xxhash.xxh64_intdigest(text, _SPARK_SEED) for text in texts), np.uint64, len(texts))
    sid = sid.view(np.int64)
    routes = SeriesRoutes(
        sid=sid,
        bucket=np.mod(sid, STATE_BUCKETS),
        pkey=np.zeros(len(texts), np.int64),
        role=np.full(len(texts), METRIC, np.int8),
        series_key=_json_arrays(series),
        copy_role=_copy_roles(series),
    )
    routes.role[_selected(series, MEMBERSHIP_SOURCES, MEMBER_METRICS, "group_id", "topic", "partition")] = MEMBER
    if lag_routing:
        group_rows = _selected(series, MEMBERSHIP_SOURCES, GROUP_METRICS, "group_id")
        lag_rows = _selected(series, LAG_SOURCES, LAG_METRICS, "group_id", "topic", "partition")
        routes.role[lag_rows | group_rows] = LAG
        state_rows = np.flatnonzero(routes.role != METRIC)
        labels = series.select(["cluster", "group_id", "topic", "partition"]).take(pa.array(state_rows)).to_pylist()
        for row, label in zip(state_rows.tolist(), labels, strict=True):
            routes.bucket[row] = spark_hash([label["cluster"], label["group_id"]]) % STATE_BUCKETS
            if not group_rows[row]:
                routes.pkey[row] = spark_hash(list(label.values()))
    return routes


def _copy_roles(series: pa.Table) -> np.ndarray:
    """BROKER for broker event series (cluster-wide or per broker, no topic), TOPIC for topic
    retention settings, CLUSTER for the admin collector's `up`, NO_COPY for the rest."""
    no_topic = pc.is_null(series.column("topic")).to_numpy(zero_copy_only=False)
    roles = np.full(series.num_rows, NO_COPY, np.int8)
    roles[_selected(series, TARGET_SOURCES, BROKER_EVENT_METRICS) & no_topic] = BROKER
    roles[_selected(series, (Source.ADMIN.value,), RETENTION_METRICS, "topic")] = TOPIC
    roles[_selected(series, (Source.ADMIN.value,), UP_METRIC)] = CLUSTER
    return roles


#: Who publishes membership: the admin collector's describe, and the commit log's changes.
MEMBERSHIP_SOURCES = (Source.ADMIN.value, Source.COMMITLOG.value)


def _selected(series: pa.Table, sources: tuple[str, ...], metrics: str | tuple[str, ...], *labels: str) -> np.ndarray:
    """Which series are samples of `metrics` from `sources` with all of `labels` set (what lag
    and membership state read)."""
    wanted = pa.array([metrics] if isinstance(metrics, str) else list(metrics))
    conditions = [
        pc.is_in(series.column("source"), pa.array(list(sources))),
        pc.is_in(series.column("metric"), wanted),
        *[pc.is_valid(series.column(name)) for name in labels],
    ]
    found = conditions[0]
    for condition in conditions[1:]:
        found = pc.and_kleene(found, condition)
    return pc.fill_null(found, False).to_numpy(zero_copy_only=False)


def _member_label(samples: pa.Table, name: str) -> pa.Array:
    """A member label column of the samples (NULL for rows built before the sample had it)."""
    if name not in samples.column_names:
        return pa.nulls(samples.num_rows, pa.string())
    column = samples.column(name).combine_chunks()
    return column if column.type == pa.string() else column.cast(pa.string())


def _json_arrays(series: pa.Table) -> pa.Array:
    """Each series' labels as a JSON array in SERIES_COLUMNS order, built column-wise; a series
    with a label that JSON must escape (a quote, a backslash, a control character) goes
    through ``json.dumps`` instead."""
    items, escape = [], pa.array(np.zeros(series.num_rows, bool))
    for name in SERIES_COLUMNS:
        column = series.column(name).combine_chunks()
        if pa.types.is_large_string(column.type):
            column = column.cast(pa.string())
        if pa.types.is_string(column.type):
            escape = pc.or_(escape, pc.fill_null(pc.match_substring_regex(column, _NEEDS_ESCAPE), False))
            column = pc.binary_join_element_wise('"', column, '"', "")
        items.append(pc.fill_null(column.cast(pa.string()), "null"))
    keys = pc.binary_join_element_wise("[", pc.binary_join_element_wise(*items, ","), "]", "")
    if not pc.any(escape).as_py():
        return keys
    texts = keys.to_pylist()
    for row in np.flatnonzero(escape.to_numpy(zero_copy_only=False)).tolist():
        texts[row] = json.dumps([series.column(name)[row].as_py() for name in SERIES_COLUMNS], ensure_ascii=False)
    return pa.array(texts, pa.string())


def spark_hash(values: Sequence[str | bytes | int | None]) -> int:
    """Spark's ``xxhash64(v1, v2, …)``: each value hashed with the previous hash as its seed,
    NULLs skipped, strings as UTF-8, ints as 4 little-endian bytes (Spark's IntegerType)."""
    seed = _SPARK_SEED
    for value in values:
        if value is None:
            continue
        if isinstance(value, int):
            data = value.to_bytes(4, "little", signed=True)
        else:
            data = value.encode() if isinstance(value, str) else value
        seed = xxhash.xxh64_intdigest(data, seed)
    return seed - 2**64 if seed >= 2**63 else seed


def _dead_mask(samples: pa.Table) -> np.ndarray:
    if "error" not in samples.schema.names:
        return np.zeros(samples.num_rows, bool)
    return pc.is_valid(samples.column("error")).to_numpy(zero_copy_only=False)


def _dead_letter_texts(samples: pa.Table, dead: np.ndarray) -> pa.Array:
    """Each dead letter's fields as one JSON object (NULL on a sample); received_at in epoch ms.

    received_at is the Kafka timestamp (a replayed batch is identical), else the time read.
    """
    now_ms = int(time.time() * 1000)
    index = np.flatnonzero(dead)
    fields = samples.select(["cluster", *DEAD_LETTER_COLUMNS]).take(pa.array(index))
    fields = fields.set_column(1, "received_at", fields.column("received_at").cast(pa.timestamp("ms", tz="UTC")))
    texts: list[str | None] = [None] * samples.num_rows
    for position, record in zip(index.tolist(), fields.to_pylist(), strict=True):
        received = record["received_at"]
        record["received_at"] = now_ms if received is None else int(received.timestamp() * 1000)
        texts[position] = json.dumps(record, ensure_ascii=False)
    return pa.array(texts, pa.string())
