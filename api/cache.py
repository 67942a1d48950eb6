"""The snapshot cache: stale-while-revalidate, one lake read at a time.

A request takes whatever snapshot is current; when it is older than `[api] cache_s`, one
background thread reads a new one (and renders /metrics from it) while requests keep being
answered from the old one. Only the very first request waits for a read. An idle API reads
nothing. A failed read keeps the previous snapshot and is reported by /readyz.
"""

from __future__ import annotations

import gzip
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from api.exposition import Rendered, render
from api.snapshot import Snapshot

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Current:
    snapshot: Snapshot
    metrics: Rendered
    metrics_gzip: bytes
    read_at: float  # time.monotonic()


class SnapshotCache:
    def __init__(self, read: Callable[[], Snapshot], max_age_s: float, max_series: int) -> None:
        self._read = read
        self._max_age_s = max_age_s
        self._max_series = max_series
        self._current: Current | None = None
        self._refreshing = threading.Lock()
        self._attempted = threading.Event()
        self._dropped_totals: dict[str, int] = {}
        self.last_error: str | None = None

    def get(self) -> Current | None:
        """The current snapshot (None before the first read); starts a refresh when it is stale."""
        current = self._current
        if current is None or time.monotonic() - current.read_at > self._max_age_s:
            self._refresh_in_background()
        return current

    def wait(self, timeout_s: float = 60) -> Current:
        """Block until the first read has finished (for the first requests after start)."""
        self._refresh_in_background()
        if not self._attempted.wait(timeout_s) or self._current is None:
            raise RuntimeError(f"no lake snapshot within {timeout_s} s: {self.last_error or 'still reading'}")
        return self._current

    def refresh(self) -> Current:
        """Read and render now (in the caller's thread)."""
        started = time.monotonic()
        snapshot = self._read()
        metrics = render(snapshot, self._max_series, self._dropped_totals)
        current = Current(snapshot, metrics, gzip.compress(metrics.text, compresslevel=1), started)
        self._current = current
        self.last_error = None
        log.debug("lake read in %.3f s, %d series", snapshot.read_seconds, metrics.exported)
        return current

    def _refresh_in_background(self) -> None:
        if not self._refreshing.acquire(blocking=False):
            return
        threading.Thread(target=self._refresh_then_release, name="lake-snapshot", daemon=True).start()

    def _refresh_then_release(self) -> None:
        try:
            self.refresh()
        except Exception as exc:
            self.last_error = f"{type(exc).__name__}: {exc}"
            log.warning("lake read failed (answers keep the previous snapshot): %s", self.last_error)
        finally:
            self._attempted.set()
            self._refreshing.release()
