"""metrics_10s / metrics_1m through a real local[2] Spark stream, against hand-computed values.

One stream of five micro-batches covers: a counter across a window boundary and across batches,
a counter reset, a duplicate and an out-of-order sample, a gauge (no rate), label sets that
differ only in which label is null, and a window closed by the watermark. Both window sizes
come from the job's one stateful operator (``rollups``), as in production.
"""

from __future__ import annotations

import datetime as dt
import json

import numpy as np
import pytest

from lagwatch.lake import TABLES
from spark_jobs import windows
from spark_jobs.windows import LABEL_TYPES, SERIES_COLUMNS, label_arrays, series_labels, window_millis
from tests.spark_jobs.conftest import newest_by_key, parsed_sample, run_rollups

S = 1000  # ms


def counter(ts_s: float, value: float, broker: str = "1") -> dict:
    return parsed_sample(int(ts_s * S), "messages_in_total", "counter", value, broker=broker)


def gauge(ts_s: float, value: float, **labels: str | None) -> dict:
    labels = {"broker": "1"} | labels
    return parsed_sample(int(ts_s * S), "under_replicated_partitions", "gauge", value, **labels)


BATCHES = [
    # batch 0: counter A 100 → 110 → 130 in [0, 10); gauge; counter D starts.
    [counter(0, 100), counter(4, 110), counter(8, 130), gauge(2, 1), gauge(7, 3), counter(5, 1, broker="D")],
    # batch 1: A crosses into [10, 20) (+20 from the 8 s sample) then resets to 5 (+5).
    [counter(12, 150), counter(16, 5), gauge(3, 7, broker=None, topic="1"), gauge(9, 9, broker="1")],
    # batch 2: A +20; a duplicate (same ts) and an out-of-order sample are ignored.
    [counter(18, 25), counter(16, 5), counter(9, 999)],
    # batch 3: A moves the watermark to 100 s − 30 s = 70 s for the next batch; D +10 at 55 s.
    [counter(100, 45), counter(55, 11, broker="D")],
    # batch 4: D at 65 s lands in [60, 70), closed (70 ≤ watermark); D at 75 s is +5 from 65 s.
    [counter(65, 13, broker="D"), counter(75, 18, broker="D")],
]


TABLES_UNDER_TEST = ("metrics_10s", "metrics_1m", "lag_1m")


@pytest.fixture(scope="module")
def emitted(spark, tmp_path_factory) -> dict[str, list[list]]:
    return run_rollups(spark, tmp_path_factory.mktemp("windows"), BATCHES, None, TABLES_UNDER_TEST)


def window_row(rows: dict, start_s: int, broker: str | None = "1", metric: str = "messages_in_total", topic=None):
    start = dt.datetime.fromtimestamp(start_s, tz=dt.UTC)
    return rows[(start, broker, topic, metric)]


def values(row) -> tuple:
    return (row.samples, row.min, row.max, row.avg, row.first, row.last, row.rate_per_s)


def newest(batches):
    return newest_by_key(batches, lambda r: (r.window_start.replace(tzinfo=dt.UTC), r.broker, r.topic, r.metric))


def test_columns_are_the_lake_table_minus_version(emitted):
    first_batch = emitted["metrics_10s"][0]
    expected = [name for name in TABLES["metrics_10s"].column_names if name != "version"]
    assert list(first_batch[0].asDict()) == expected
    assert len(first_batch) == 3  # A [0,10), gauge [0,10), D [0,10)
    assert all(rows == [] for rows in emitted["lag_1m"])  # no lag_config: no lag rows


def test_ten_second_windows_and_counter_rates(emitted):
    rows = newest(emitted["metrics_10s"])
    # [0,10): increases 10 + 20 over 0 → 8 s.
    assert values(window_row(rows, 0)) == (3, 100.0, 130.0, 340 / 3, 100.0, 130.0, 30 / 8)
    # [10,20): +20 (8 → 12 s), reset +5, +20; the span starts at the previous window's 8 s sample.
    assert values(window_row(rows, 10)) == (3, 5.0, 150.0, 60.0, 150.0, 25.0, 45 / 10)
    # [100,110): +20 from the 18 s sample.
    assert values(window_row(rows, 100)) == (1, 45.0, 45.0, 45.0, 45.0, 45.0, 20 / 82)
    gauge_row = window_row(rows, 0, metric="under_replicated_partitions")
    assert values(gauge_row) == (3, 1.0, 9.0, 13 / 3, 1.0, 9.0, None)
    assert gauge_row.kind == "gauge" and gauge_row.cluster == "test" and gauge_row.source == "jmx"
    assert gauge_row.window_end.replace(tzinfo=dt.UTC) - gauge_row.window_start.replace(tzinfo=dt.UTC) == dt.timedelta(
        seconds=10
    )


def test_series_whose_labels_differ_only_by_null_stay_apart(emitted):
    rows = newest(emitted["metrics_10s"])
    assert window_row(rows, 0, broker=None, topic="1", metric="under_replicated_partitions").last == 7.0
    assert window_row(rows, 0, broker=None, topic="1", metric="under_replicated_partitions").samples == 1


def test_open_window_is_re_emitted_as_batches_add_samples(emitted):
    per_batch = [
        [values(r) for r in rows if r.broker == "1" and r.metric == "messages_in_total" and r.window_start.second == 10]
        for rows in emitted["metrics_10s"]
    ]
    assert per_batch[1] == [(2, 5.0, 150.0, 77.5, 150.0, 5.0, 25 / 8)]
    assert per_batch[2] == [(3, 5.0, 150.0, 60.0, 150.0, 25.0, 45 / 10)]


def test_window_closed_by_the_watermark_is_not_emitted_again(emitted):
    rows = newest(emitted["metrics_10s"])
    d_windows = sorted(start.second + 60 * start.minute for start, broker, _, _ in rows if broker == "D")
    assert d_windows == [0, 50, 70]  # the 65 s sample's window [60, 70) was closed
    assert values(window_row(rows, 70, broker="D")) == (1, 18.0, 18.0, 18.0, 18.0, 18.0, 5 / 10)


def test_one_minute_windows(emitted):
    rows = newest(emitted["metrics_1m"])
    assert values(window_row(rows, 0)) == (6, 5.0, 150.0, 520 / 6, 100.0, 25.0, 75 / 18)
    assert values(window_row(rows, 60)) == (1, 45.0, 45.0, 45.0, 45.0, 45.0, 20 / 82)


def test_window_size_errors_name_the_bad_value():
    assert (window_millis("10 seconds"), window_millis("1 minute")) == (10_000, 60_000)
    with pytest.raises(ValueError, match="'ten seconds'"):
        window_millis("ten seconds")


def test_a_batch_spanning_windows_hands_its_newest_sample_to_the_next_batch():
    """A backlog batch holds several windows of one series; the next batch's first increase
    must start from the batch's newest sample, and a replay of it must be dropped."""
    import json

    import pandas as pd

    from spark_jobs.windows import empty_series, empty_windows, update_windows

    key = json.dumps(["c", "jmx", "bytes_in_total", "counter", "1", None, None, None, None])

    def batch(points: list[tuple[int, float]]) -> pd.DataFrame:
        ts, values = zip(*points, strict=True)
        return pd.DataFrame({"sid": 7, "ts": ts, "value": values, "series_key": key})

    # Three windows of 10 s in one batch: the newest sample is (25 s, 130).
    _, series, open_windows = update_windows(
        batch([(5_000, 100.0), (15_000, 110.0), (25_000, 130.0)]), empty_series(), empty_windows(), 10_000, 0, 30_000
    )
    assert series["sid"].tolist() == [7] and series["last_ts"].tolist() == [25_000], "one entry per series"
    rows, series, _ = update_windows(batch([(25_000, 130.0), (35_000, 170.0)]), series, open_windows, 10_000, 0, 30_000)
    assert rows["window_start"].tolist() == [30_000], "the replayed 25 s sample is a duplicate, not a new window"
    assert rows["rate_per_s"].tolist() == [4.0], "(170 − 130) / 10 s, from the previous batch's newest sample"


def test_a_backlog_batch_keeps_only_windows_the_next_watermark_leaves_open():
    """Windows ending at or below (newest sample − delay) are emitted, then leave the state."""
    import json

    import pandas as pd

    from spark_jobs.windows import empty_series, empty_windows, update_windows

    key = json.dumps(["c", "jmx", "under_replicated", "gauge", "1", None, None, None, None])
    ts = [5_000, 15_000, 25_000, 65_000]
    samples = pd.DataFrame({"sid": 9, "ts": ts, "value": [1.0, 2.0, 3.0, 4.0], "series_key": key})
    rows, _, open_windows = update_windows(samples, empty_series(), empty_windows(), 10_000, 0, 30_000)
    assert rows["window_start"].tolist() == [0, 10_000, 20_000, 60_000], "every window is emitted once"
    assert open_windows["wstart"].tolist() == [60_000], "only the window ending after 65 s − 30 s stays"


def test_output_label_columns_match_the_parsed_series_keys() -> None:
    """label_arrays (Arrow, gathered per distinct series) reads the same labels as series_labels."""
    series = [
        ["c", "admin", "consumer_lag", "gauge", None, "orders", 3, "g1", None],
        ["c", "jmx", "bytes_in_total", "counter", "1", None, None, None, None],
        ["c", "admin", "log_end_offset", "counter", None, "zé\u001f", -1, None, "client"],
    ]
    rows = [2, 0, 2, 1, 0, 2]
    keys = np.array([json.dumps(series[row]) for row in rows], dtype=object)
    ids = np.array([100 + row for row in rows], np.int64)

    arrays = label_arrays(keys, ids, LABEL_TYPES)
    expected = series_labels(keys)

    assert {name: arrays[name].to_pylist() for name in SERIES_COLUMNS} == {
        name: expected[name].tolist() for name in SERIES_COLUMNS
    }
    assert arrays["partition"].to_pylist() == [-1, 3, -1, None, 3, -1]
    assert arrays["broker"].to_pylist() == [None, None, None, "1", None, None]


def test_parsed_keys_stay_right_when_a_batch_overflows_the_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """A batch with more new series than the cache holds drops the cache and still reads every key."""
    monkeypatch.setattr(windows, "PARSED_KEYS_MAX", 4)
    monkeypatch.setattr(windows, "_PARSED", {})
    labels = [["c", "admin", "consumer_lag", "gauge", None, f"t{n}", n, "g", None] for n in range(6)]
    texts = [json.dumps(label) for label in labels]

    first = windows.parsed_keys([0, 1, 2], texts[:3])
    again = [2, 3, 4, 5, 0]  # 3 new beside 2 cached: over 4
    second = windows.parsed_keys(again, [texts[n] for n in again])

    assert first == [tuple(label) for label in labels[:3]]
    assert second == [tuple(labels[n]) for n in again]
    assert set(windows._PARSED) == {3, 4, 5}, "the cache restarts from this batch's new series"


def _some_state() -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    rng = np.random.default_rng(7)
    series = {"sid": np.array([3, 9], np.int64), "last_ts": np.array([5_000, 7_000]), "last_value": rng.random(2)}
    open_windows = windows.empty_windows()
    open_windows = {name: np.resize(column, 3) for name, column in open_windows.items()}
    for column in open_windows.values():
        column[:] = rng.random(3) * 1e6 if column.dtype == np.float64 else rng.integers(-5, 1 << 40, 3)
    return series, open_windows


def test_window_state_round_trips_with_its_types_and_stays_writable() -> None:
    series, open_windows = _some_state()
    got_series, got_windows = windows.decode_state(windows.encode_state(series, open_windows))
    for expected, got in ((series, got_series), (open_windows, got_windows)):
        assert list(got) == list(expected)
        for name, column in expected.items():
            assert got[name].dtype == column.dtype and got[name].tolist() == column.tolist(), name
            assert got[name].flags.writeable, name
    empty = windows.decode_state(windows.encode_state(windows.empty_series(), windows.empty_windows()))
    assert all(len(column) == 0 for part in empty for column in part.values())


def test_window_state_saved_as_npz_by_an_older_checkpoint_still_decodes() -> None:
    """A checkpoint keeps the state blob of its last batch: the older npz layout must still load."""
    import io

    series, open_windows = _some_state()
    buffer = io.BytesIO()
    np.savez(buffer, **{f"s_{k}": v for k, v in series.items()}, **{f"w_{k}": v for k, v in open_windows.items()})
    got_series, got_windows = windows.decode_state(buffer.getvalue())
    assert {k: v.tolist() for k, v in got_series.items()} == {k: v.tolist() for k, v in series.items()}
    assert {k: v.tolist() for k, v in got_windows.items()} == {k: v.tolist() for k, v in open_windows.items()}
