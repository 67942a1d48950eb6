"""The retention margin: how long until the broker's retention deletes a group's committed offset.

The broker deletes by what it is told, not by how fast the log grows, so the margin comes from
the topic's settings (`topic_cleanup_policy`, `topic_retention_ms`, `topic_retention_bytes`,
read by the admin collector and sent to every state bucket: ``route.py``) and from how old the
record at the committed offset is:

- **time limit** (`retention.ms` ≥ 0): a segment is deleted once its newest record is older
  than retention.ms, so the committed record lives at least retention.ms − its age. The age is
  the partition's time lag, interpolated from the log-end history (``time_lag.py``: when the log
  end passed the committed offset is when that record was appended). Where the committed offset
  is older than the history, only "older than the history" is known, and the margin is given as
  the most it can be (the reason says "at most"): still never an alarm the facts do not support.
- **size limit** (`retention.bytes` ≥ 0, and the partition's size known): the oldest segments go
  while the partition is larger, so the records kept are about retention.bytes worth; with the
  bytes per record of the partition, the committed record is deleted once the produce rate
  has pushed `retention.bytes` of newer records behind it.
- the nearer limit is the margin, and `retention_limit` says which; 0 once records were deleted
  unread (LOSS).
- no margin (NULL, and so no alert): a compacted-only topic (`cleanup.policy=compact`: retention
  never deletes), a topic without either limit (both -1), a caught-up partition (nothing unread
  to delete), or settings not read yet. The reason says which.

Both limits act on whole segments, and the broker checks every log.retention.check.interval.ms,
so the broker deletes at the margin or later, never sooner: a margin errs towards early.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from lagwatch.vocabulary import (
    CLEANUP_POLICY_CODE,
    CLEANUP_POLICY_METRIC,
    RETENTION_BYTES_METRIC,
    RETENTION_MS_METRIC,
    UNLIMITED,
)
from spark_jobs.lag import reasons
from spark_jobs.windows import series_labels

TIME, SIZE = "time", "size"
#: Settings not read again for this long (behind the newest reading of any topic) are forgotten:
#: a deleted topic's. The collector reads each topic at least daily (topic_config_refresh_s ≤ 1 day).
KEEP_MS = 3 * 86_400_000
_LABELS = ("cluster", "metric", "topic")


@dataclass(frozen=True, slots=True)
class TopicLimits:
    """A topic's retention settings as newest read (None: that setting was not read yet)."""

    cleanup_policy: int | None = None
    retention_ms: float | None = None
    retention_bytes: float | None = None


@dataclass(frozen=True, slots=True)
class RecordAge:
    """How old the record at the committed offset is: exactly, or at least (`at_least`)."""

    seconds: float
    at_least: bool = False


@dataclass(frozen=True, slots=True)
class PartitionFacts:
    """What the margin needs of one group-partition's newest observation."""

    committed: int
    lag: int
    log_start: int | None
    produce_rate: float | None
    age: RecordAge | None
    #: The partition's size in bytes (None: not known, so the size limit cannot be judged).
    size_bytes: float | None = None


@dataclass(frozen=True, slots=True)
class Margin:
    seconds: float | None
    limit: str | None  # TIME | SIZE | None
    reason: str


def margin(limits: TopicLimits | None, facts: PartitionFacts) -> Margin:
    """Seconds until the broker's nearer retention limit deletes the committed offset (module doc)."""
    if facts.log_start is not None and facts.committed < facts.log_start:
        return Margin(0.0, None, reasons.retention_passed(facts.log_start - facts.committed))
    if limits is None or limits.cleanup_policy is None:
        return Margin(None, None, reasons.retention_not_read())
    if limits.cleanup_policy == CLEANUP_POLICY_CODE["compact"]:
        return Margin(None, None, reasons.retention_compacted())
    time_limit = _set(limits.retention_ms)
    size_limit = _set(limits.retention_bytes)
    if time_limit is None and size_limit is None:
        return Margin(None, None, reasons.retention_infinite())
    if facts.lag <= 0:
        return Margin(None, None, reasons.retention_caught_up())
    by_time = _time_margin(time_limit, facts.age)
    by_size = _size_margin(size_limit, facts)
    if by_size is not None and (by_time is None or by_size < by_time):
        return Margin(by_size, SIZE, reasons.retention_size(size_limit or 0, facts.lag, by_size, facts.produce_rate))
    if by_time is not None and facts.age is not None:
        return Margin(by_time, TIME, reasons.retention_time(time_limit or 0, facts.age.seconds, facts.age.at_least))
    return Margin(None, None, reasons.retention_unknown(time_limit, size_limit, facts.size_bytes is not None))


def _set(limit: float | None) -> float | None:
    """A limit that applies (None: unlimited, -1, or not read)."""
    return None if limit is None or limit == UNLIMITED or limit < 0 else float(limit)


def _time_margin(retention_ms: float | None, age: RecordAge | None) -> float | None:
    if retention_ms is None or age is None:
        return None
    return max(0.0, retention_ms / 1000.0 - age.seconds)


def _size_margin(retention_bytes: float | None, facts: PartitionFacts) -> float | None:
    """(retention.bytes − bytes behind the committed offset) at the produce rate in bytes; None when
    the size is unknown or nothing is produced (then the size limit never reaches the commit)."""
    if retention_bytes is None or facts.size_bytes is None or facts.log_start is None:
        return None
    records = facts.committed + facts.lag - facts.log_start
    if records <= 0 or facts.size_bytes <= 0:
        return None
    bytes_per_record = facts.size_bytes / records
    headroom = retention_bytes - facts.lag * bytes_per_record
    if headroom <= 0:
        return 0.0
    if facts.produce_rate is None or facts.produce_rate <= 0:
        return None
    return headroom / (facts.produce_rate * bytes_per_record)


# -- the topic settings each bucket keeps (TOPIC copies, route.py) ----------------------------------


@dataclass(slots=True)
class TopicSettings:
    """One bucket's newest reading of each topic setting: (cluster, topic, metric) → (ts, value)."""

    readings: dict[tuple[str, str, str], tuple[int, float]] = field(default_factory=dict)

    def limits(self, cluster: str, topic: str) -> TopicLimits | None:
        """The topic's settings, or None when none of them was read."""
        found = [self.readings.get((cluster, topic, metric)) for metric in _METRICS]
        if all(reading is None for reading in found):
            return None
        policy, retention_ms, retention_bytes = (None if r is None else r[1] for r in found)
        return TopicLimits(None if policy is None else round(policy), retention_ms, retention_bytes)


_METRICS = (CLEANUP_POLICY_METRIC, RETENTION_MS_METRIC, RETENTION_BYTES_METRIC)


def encode(state: TopicSettings) -> bytes:
    return pickle.dumps(state.readings, protocol=pickle.HIGHEST_PROTOCOL)


def decode(blob: bytes) -> TopicSettings:
    return TopicSettings(pickle.loads(blob))


def fold(state: TopicSettings, samples: pd.DataFrame) -> None:
    """Keep each setting's newest reading (columns ts, value, series_key), then forget settings
    not read again within KEEP_MS of the newest reading."""
    if samples.empty:
        return
    labels = series_labels(samples["series_key"].to_numpy(), _LABELS)
    ts, values = samples["ts"].to_numpy(np.int64).tolist(), samples["value"].to_numpy(np.float64).tolist()
    readings = state.readings
    for cluster, metric, topic, at, value in zip(*(labels[n] for n in _LABELS), ts, values, strict=True):
        key = (cluster, topic, metric)
        if key not in readings or readings[key][0] < at:
            readings[key] = (at, value)
    oldest = max(at for at, _ in readings.values()) - KEEP_MS
    for key in [key for key, (at, _) in readings.items() if at < oldest]:
        del readings[key]
