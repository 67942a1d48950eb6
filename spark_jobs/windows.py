"""Event-time tumbling windows (10 s, 1 min) of every metric series: the metrics_10s/metrics_1m rows.

Why a stateful pandas function and not ``groupBy(window(...)).agg(...)``: a counter's rate in a
window needs the sample *before* the window (the increase from the previous sample counts in
the window of the later sample), and a counter reset (broker restart: value < previous) must
count the new value as the increase. That is per-series state across windows and batches,
which Spark's built-in aggregation does not keep.

Why buckets: one Python call per series (a pandas frame and a state object per group) is far
too slow for hundreds of thousands of series (bench/RECORDS.md). Series are hashed into buckets
instead (``rollups.py`` runs the one stateful operator); each call handles a whole bucket with
numpy, and a bucket's state per window size is one npz blob of column arrays:

- series table: series id → (ts, value) of the newest sample seen;
- open windows: (series id, window start) → samples, min, max, sum, first/last (by ts),
  the summed counter increase and the ts its span starts at (the previous sample's ts).

Rules (also in docs/rollups.md for operators):

- rate_per_s = Σ increases / (last sample ts in window − ts of the sample before the first
  increase), for counters only; NULL for gauges or when no sample precedes any in the window.
- A sample whose ts is not newer than the newest one already seen for its series is dropped:
  that is a duplicate (same ts; a retried produce that escaped upstream dedup) or an
  out-of-order straggler (Kafka keeps one entity's samples in order, so this should not
  happen). Counting it could double a sample or corrupt the increase chain.
- A window whose end is at or below the watermark is closed: its state is dropped and it is
  never emitted again (re-emitting from partial state would overwrite the complete row in the
  lake, where the newest version wins). A sample arriving for a closed window still advances
  its series' last (ts, value), so the next window's rate stays right.
- A window is also dropped from state, after its rows are emitted, when its end is at or below
  the batch's newest sample minus the watermark delay: Spark's next watermark is at least that,
  so the window is closed from the next batch on. A batch catching up a backlog spans many
  minutes; carrying all its windows to the next batch made the state ten times larger.
- A series with no sample for ``SERIES_TTL_MS`` past the watermark is forgotten; its next
  sample then has no predecessor (rate NULL for that window, as for a brand-new series).
- The series id is a 64-bit hash of the labels (collision odds ~1e-8 at a million series).
"""

from __future__ import annotations

import io
import json
import logging
import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from lagwatch import lake as lakelib

log = logging.getLogger(__name__)

#: Forget a silent series this long after the watermark passed its last sample (1 hour).
SERIES_TTL_MS = 3_600_000
LABEL_COLUMNS: tuple[str, ...] = ("broker", "topic", "partition", "group_id", "client_id")
SERIES_COLUMNS: tuple[str, ...] = ("cluster", "source", "metric", "kind", *LABEL_COLUMNS)
#: Output rows as column arrays (times in epoch ms; labels may be Arrow), assembled by rollups.py.
Columns = dict[str, Any]
#: The label columns of metrics_* rows, typed as the lake's schema has them.
LABEL_TYPES: dict[str, pa.DataType] = {
    field.name: field.type for field in lakelib.arrow_schema("metrics_10s") if field.name in SERIES_COLUMNS
}

_SERIES_FIELDS = ("sid", "last_ts", "last_value")
_WINDOW_FIELDS = (
    "sid",
    "wstart",
    "samples",
    "min",
    "max",
    "sum",
    "first_ts",
    "first",
    "last_ts",
    "last",
    "increase",
    "span_start",
)


def window_millis(size: str) -> int:
    """'10 seconds' / '1 minute' / '5 minutes' → milliseconds; a clear error for anything else."""
    match = re.fullmatch(r"\s*(\d+)\s*(second|seconds|minute|minutes)\s*", size)
    if not match:
        raise ValueError(f"window size {size!r}: expected e.g. '10 seconds' or '1 minute'")
    amount = int(match.group(1))
    if amount <= 0:
        raise ValueError(f"window size {size!r} must be positive")
    return amount * (60_000 if match.group(2).startswith("minute") else 1_000)


def series_labels(keys: np.ndarray, names: tuple[str, ...] = SERIES_COLUMNS, ids: np.ndarray | None = None) -> Columns:
    """`series_key` strings → one object array per label in ``names`` (None for NULL, partition an int).

    ``ids``, the rows' series ids when the caller has them, makes the grouping cheaper:
    integers hash faster than the keys' text.
    """
    codes, decoded = _distinct_labels(keys, ids)
    return {name: np.array(_label_values(decoded, name), dtype=object)[codes] for name in names}


def label_arrays(keys: np.ndarray, ids: np.ndarray, types: dict[str, pa.DataType]) -> dict[str, pa.Array]:
    """Like :func:`series_labels`, but Arrow arrays of the given types, for output rows.

    Why: building an Arrow column from an object array costs per row; here each distinct
    series' label is converted once and the rows gather it (a take), for far less per row
    (bench/RECORDS.md).
    """
    codes, decoded = _distinct_labels(keys, ids)
    indices = pa.array(codes, pa.int32())
    return {name: pa.array(_label_values(decoded, name), kind).take(indices) for name, kind in types.items()}


def _distinct_labels(keys: np.ndarray, ids: np.ndarray | None) -> tuple[np.ndarray, list[tuple[Any, ...]]]:
    """(each row's index into the distinct series, the distinct series' parsed labels)."""
    codes, distinct = pd.factorize(keys if ids is None else ids)
    if ids is None:
        return codes, parsed_keys(distinct.tolist(), distinct)
    a_row = np.empty(len(distinct), np.int64)
    a_row[codes] = np.arange(len(codes))  # any row of a series will do: its id and key are one-to-one
    return codes, parsed_keys(distinct.tolist(), keys[a_row])


#: Series labels parsed in earlier batches, by series id or key (a series comes back every batch).
_PARSED: dict[int | str, tuple[Any, ...]] = {}
#: Entries kept at most; the whole cache is dropped when a batch would pass it. Why not an LRU:
#: a fleet's batch visits more series than such a bound, in the same order every cycle, and a
#: cyclic pass over more keys than an LRU holds never hits.
PARSED_KEYS_MAX = 1 << 19


def parsed_keys(names: list[int] | list[str], texts: Sequence[str]) -> list[tuple[Any, ...]]:
    """The labels of each distinct series, named by its id or key (``names``) and given as its
    key's JSON text (``texts``); the series not seen before parsed in one JSON call, since a
    call per key costs several times more at tens of thousands of new series."""
    found: list[tuple[Any, ...] | None] = list(map(_PARSED.get, names))
    missing = [i for i, labels in enumerate(found) if labels is None]
    if not missing:
        return found  # type: ignore[return-value]
    if len(_PARSED) + len(missing) > PARSED_KEYS_MAX:
        _PARSED.clear()
    parsed = json.loads(f"[{','.join([texts[i] for i in missing])}]")
    for i, labels in zip(missing, parsed, strict=True):
        found[i] = _PARSED[names[i]] = tuple(labels)
    return found  # type: ignore[return-value]


def _label_values(decoded: list[tuple[Any, ...]], name: str) -> list[Any]:
    index = SERIES_COLUMNS.index(name)
    if name == "partition":
        return [None if labels[index] is None else int(labels[index]) for labels in decoded]
    return [labels[index] for labels in decoded]


def empty_series() -> dict[str, np.ndarray]:
    return {"sid": np.empty(0, np.int64), "last_ts": np.empty(0, np.int64), "last_value": np.empty(0, np.float64)}


def empty_windows() -> dict[str, np.ndarray]:
    floats = ("min", "max", "sum", "first", "last", "increase")
    return {name: np.empty(0, np.float64 if name in floats else np.int64) for name in _WINDOW_FIELDS}


#: The state blob's layout tag: raw little-endian columns follow (see encode_state).
_STATE_MAGIC = b"LWW1"
_FLOAT_FIELDS = frozenset({"last_value", "min", "max", "sum", "first", "last", "increase"})


def _dtype(name: str) -> str:
    return "<f8" if name in _FLOAT_FIELDS else "<i8"


def encode_state(series: dict[str, np.ndarray], windows: dict[str, np.ndarray]) -> bytes:
    """Column arrays → one blob: a tag, the two lengths, then each column's raw 8-byte values in
    field order. Why not npz: every bucket's state is read and written every batch, and the
    zip container cost ≈ 5 ms a bucket and table even for a handful of series (no pickle either)."""
    counts = np.array([len(series["sid"]), len(windows["sid"])], "<i8")
    columns = [np.ascontiguousarray(series[k], _dtype(k)) for k in _SERIES_FIELDS]
    columns += [np.ascontiguousarray(windows[k], _dtype(k)) for k in _WINDOW_FIELDS]
    return b"".join([_STATE_MAGIC, counts.tobytes(), *(column.tobytes() for column in columns)])


def decode_state(blob: bytes) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """encode_state's columns (writable arrays); an npz blob from a checkpoint written before is read too."""
    if not blob.startswith(_STATE_MAGIC):
        return _decode_npz(blob)
    data = bytearray(blob)  # one copy, so the arrays are writable like any other
    n_series, n_windows = np.frombuffer(data, "<i8", 2, len(_STATE_MAGIC)).tolist()
    offset = len(_STATE_MAGIC) + 16
    decoded: list[dict[str, np.ndarray]] = []
    for fields, count in ((_SERIES_FIELDS, n_series), (_WINDOW_FIELDS, n_windows)):
        columns = {}
        for name in fields:
            columns[name] = np.frombuffer(data, _dtype(name), count, offset)
            offset += 8 * count
        decoded.append(columns)
    return decoded[0], decoded[1]


def _decode_npz(blob: bytes) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    with np.load(io.BytesIO(blob), allow_pickle=False) as data:
        series = {k: data[f"s_{k}"] for k in _SERIES_FIELDS}
        windows = {k: data[f"w_{k}"] for k in _WINDOW_FIELDS}
    return series, windows


def update_windows(
    batch: pd.DataFrame,
    series: dict[str, np.ndarray],
    windows: dict[str, np.ndarray],
    size_ms: int,
    watermark_ms: int,
    delay_ms: int,
) -> tuple[Columns, dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Fold one batch of samples into a bucket's state; return (columns to emit, series, windows).

    Pure pandas/numpy so it can be tested and profiled without Spark. ``batch`` has columns
    sid, ts, value and series_key; ``series``/``windows`` are sorted by key. ``delay_ms`` is
    the query's watermark delay.
    """
    samples = _new_samples(batch, series)
    if samples.empty:
        return {}, series, windows
    sid = samples["sid"].to_numpy(np.int64)
    ts = samples["ts"].to_numpy(np.int64)
    value = samples["value"].to_numpy(np.float64)
    prev_ts, prev_value = _previous_samples(sid, ts, value, series)
    has_prev = prev_ts >= 0
    kinds = series_labels(samples["series_key"].to_numpy(), ("kind",), ids=sid)["kind"]
    is_counter = (kinds == "counter") & has_prev
    delta = value - prev_value
    increase = np.where(is_counter, np.where(delta >= 0, delta, value), 0.0)
    span_from = np.where(is_counter, prev_ts, np.iinfo(np.int64).max)

    wstart = ts - ts % size_ms
    starts = np.flatnonzero(np.r_[True, (sid[1:] != sid[:-1]) | (wstart[1:] != wstart[:-1])])
    ends = np.r_[starts[1:], len(sid)] - 1
    fresh = {
        "sid": sid[starts],
        "wstart": wstart[starts],
        "samples": np.add.reduceat(np.ones_like(ts), starts),
        "min": np.minimum.reduceat(value, starts),
        "max": np.maximum.reduceat(value, starts),
        "sum": np.add.reduceat(value, starts),
        "first_ts": ts[starts],
        "first": value[starts],
        "last_ts": ts[ends],
        "last": value[ends],
        "increase": np.add.reduceat(increase, starts),
        "span_start": np.minimum.reduceat(span_from, starts),
    }
    merged = _merge_windows(windows, fresh)
    open_now = merged["wstart"] + size_ms > watermark_ms
    touched_open = open_now & merged.pop("touched")
    rows = _output_rows(merged, touched_open, samples.iloc[starts], fresh, size_ms)
    next_watermark_floor = max(watermark_ms, int(ts.max()) - delay_ms)
    keep = merged["wstart"] + size_ms > next_watermark_floor
    windows = {k: v[keep] for k, v in merged.items()}
    newest = np.r_[sid[1:] != sid[:-1], True]  # the last row of each series (rows sorted by sid, ts)
    series = _advance_series(series, sid[newest], ts[newest], value[newest], watermark_ms)
    return rows, series, windows


def _new_samples(batch: pd.DataFrame, series: dict[str, np.ndarray]) -> pd.DataFrame:
    """Sorted by (series, ts), without duplicates and without samples older than the series' newest."""
    # numpy's lexsort and a neighbour compare: half the time of pandas' sort_values + drop_duplicates
    order = np.lexsort((batch["ts"].to_numpy(np.int64), batch["sid"].to_numpy(np.int64)))
    sid = batch["sid"].to_numpy(np.int64)[order]
    ts = batch["ts"].to_numpy(np.int64)[order]
    first = np.ones(len(sid), bool)
    first[1:] = (sid[1:] != sid[:-1]) | (ts[1:] != ts[:-1])
    batch, sid, ts = batch.take(order[first]), sid[first], ts[first]
    known_ts = _lookup(series["sid"], series["last_ts"], sid, default=-1)
    keep = ts > known_ts
    dropped = int((~keep).sum())
    if dropped:
        log.debug("dropped %d sample(s) not newer than their series' newest sample", dropped)
    return batch[keep].reset_index(drop=True)


def _lookup(keys: np.ndarray, values: np.ndarray, wanted: np.ndarray, default: Any) -> np.ndarray:
    """values[keys == wanted] per element of wanted (keys sorted and unique), default when absent."""
    if len(keys) == 0:
        return np.full(len(wanted), default, dtype=values.dtype)
    pos = np.clip(np.searchsorted(keys, wanted), 0, len(keys) - 1)
    return np.where(keys[pos] == wanted, values[pos], default)


def _previous_samples(
    sid: np.ndarray, ts: np.ndarray, value: np.ndarray, series: dict[str, np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """Each sample's predecessor (ts, value) in its series: the row before, or the state's last."""
    prev_ts = np.r_[-1, ts[:-1]]
    prev_value = np.r_[np.nan, value[:-1]]
    first_of_series = np.r_[True, sid[1:] != sid[:-1]]
    prev_ts[first_of_series] = _lookup(series["sid"], series["last_ts"], sid[first_of_series], default=-1)
    prev_value[first_of_series] = _lookup(series["sid"], series["last_value"], sid[first_of_series], default=np.nan)
    return prev_ts, prev_value


def _merge_windows(state: dict[str, np.ndarray], fresh: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Combine open-window partials with this batch's (the batch is always later in time)."""
    state_key = pd.MultiIndex.from_arrays([state["sid"], state["wstart"]])
    fresh_key = pd.MultiIndex.from_arrays([fresh["sid"], fresh["wstart"]])
    pos = state_key.get_indexer(fresh_key)
    old = pos >= 0
    merged_fresh = dict(fresh)
    if old.any():
        p = pos[old]
        for name in ("samples", "sum", "increase"):
            merged_fresh[name] = fresh[name].copy()
            merged_fresh[name][old] += state[name][p]
        for name, pick in (("min", np.minimum), ("max", np.maximum), ("span_start", np.minimum)):
            merged_fresh[name] = fresh[name].copy()
            merged_fresh[name][old] = pick(fresh[name][old], state[name][p])
        for name in ("first_ts", "first"):
            merged_fresh[name] = fresh[name].copy()
            merged_fresh[name][old] = state[name][p]
    untouched = np.ones(len(state["sid"]), dtype=bool)
    untouched[pos[old]] = False
    merged = {name: np.concatenate([state[name][untouched], merged_fresh[name]]) for name in _WINDOW_FIELDS}
    merged["touched"] = np.r_[np.zeros(int(untouched.sum()), bool), np.ones(len(fresh["sid"]), bool)]
    order = np.lexsort((merged["wstart"], merged["sid"]))
    return {name: column[order] for name, column in merged.items()}


def _output_rows(
    merged: dict[str, np.ndarray],
    emit: np.ndarray,
    labels: pd.DataFrame,
    fresh: dict[str, np.ndarray],
    size_ms: int,
) -> Columns:
    """metrics_* columns for the open windows this batch touched; labels come from the batch.

    Plain arrays, times in epoch ms: ``rollups`` assembles every table's rows at once, which
    is far cheaper than building and concatenating DataFrames.
    """
    if not emit.any():
        return {}
    out = {name: column[emit] for name, column in merged.items()}
    label_key = pd.MultiIndex.from_arrays([fresh["sid"], fresh["wstart"]])
    label_rows = labels.iloc[label_key.get_indexer(pd.MultiIndex.from_arrays([out["sid"], out["wstart"]]))]
    span_s = (out["last_ts"] - out["span_start"]) / 1000.0
    has_span = (out["span_start"] != np.iinfo(np.int64).max) & (span_s > 0)
    rate = np.where(has_span, out["increase"] / np.where(has_span, span_s, 1.0), np.nan)
    return {
        **label_arrays(label_rows["series_key"].to_numpy(), out["sid"], LABEL_TYPES),
        "window_start": out["wstart"],
        "window_end": out["wstart"] + size_ms,
        "samples": out["samples"],
        "min": out["min"],
        "max": out["max"],
        "avg": out["sum"] / out["samples"],
        "first": out["first"],
        "last": out["last"],
        "rate_per_s": rate,
    }


def _advance_series(
    series: dict[str, np.ndarray], sid: np.ndarray, last_ts: np.ndarray, last_value: np.ndarray, watermark_ms: int
) -> dict[str, np.ndarray]:
    """Newest (ts, value) per series; series silent for SERIES_TTL_MS past the watermark are dropped.

    ``sid`` holds each series of the batch once: the table must stay unique per series, or
    :func:`_lookup` would find an older entry (a batch spanning several windows of a series
    once left one entry per window, and the next batch chained its increase to the oldest).
    """
    keep_old = ~np.isin(series["sid"], sid)
    merged_sid = np.concatenate([series["sid"][keep_old], sid])
    merged_ts = np.concatenate([series["last_ts"][keep_old], last_ts])
    merged_value = np.concatenate([series["last_value"][keep_old], last_value])
    alive = merged_ts + SERIES_TTL_MS > watermark_ms
    order = np.argsort(merged_sid[alive], kind="stable")
    return {
        "sid": merged_sid[alive][order],
        "last_ts": merged_ts[alive][order],
        "last_value": merged_value[alive][order],
    }
