"""The snapshot cache: stale-while-revalidate within a bound, one lake read at a time.

A request takes whatever snapshot is current; when it is older than `[api] cache_s`, one
background thread reads a new one (and renders /metrics from it) while requests keep being
answered from the old one, for at most `STALE_SERVED_S` more. An idle API reads nothing, so
the first request after an idle spell finds a snapshot minutes old: it waits for the new read
instead (`wait_newer`) — answered from the old one, /readyz said 503 and /metrics lacked every
series newer than the API's start while the lake was fresh. A failed read keeps the previous
snapshot and is reported by /readyz.
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

#: Seconds past `cache_s` a snapshot is still served while the next one is read (a scrape every
#: 15 s keeps its low latency); an older one makes the request wait for that read.
STALE_SERVED_S = 30.0
#: How long a request waits for a read before it is answered from the older snapshot.
READ_WAIT_S = 30.0


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
        #: Reads finished (read or failed), under _finished_changed: what wait and wait_newer wait on.
        self._finished = 0
        self._finished_changed = threading.Condition()
        self._dropped_totals: dict[str, int] = {}
        self.last_error: str | None = None

    def get(self) -> Current | None:
        """The current snapshot (None before the first read); starts a refresh when it is stale."""
        current = self._current
        if current is None or time.monotonic() - current.read_at > self._max_age_s:
            self._refresh_in_background()
        return current

    def age_s(self, current: Current) -> float:
        return time.monotonic() - current.read_at

    def servable(self, current: Current | None, max_age_s: float | None = None) -> bool:
        """Young enough to answer from: within `max_age_s` (default: cache_s + STALE_SERVED_S)."""
        bound = self._max_age_s + STALE_SERVED_S if max_age_s is None else max_age_s
        return current is not None and self.age_s(current) <= bound

    def wait_newer(self, timeout_s: float = READ_WAIT_S) -> Current | None:
        """Block until a read that was running or is started now has finished; the snapshot then
        current (the older one if that read failed or took longer than `timeout_s`)."""
        with self._finished_changed:
            before = self._finished
        self._refresh_in_background()
        with self._finished_changed:
            self._finished_changed.wait_for(lambda: self._finished > before, timeout_s)
        return self._current

    def wait(self, timeout_s: float = 60) -> Current:
        """Block until the first read has finished (for the first requests after start)."""
        self._refresh_in_background()
        with self._finished_changed:
            finished = self._finished_changed.wait_for(lambda: self._finished > 0, timeout_s)
        if not finished or self._current is None:
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

    def close(self, timeout_s: float = READ_WAIT_S) -> None:
        """Wait for a read in flight. Its daemon thread, still inside DuckDB when the interpreter
        exits, would be unwound through C++ frames that abort the process at the very end of a
        clean stop ("FATAL: exception not rethrown")."""
        if self._refreshing.acquire(timeout=timeout_s):
            self._refreshing.release()

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
            self._refreshing.release()
            with self._finished_changed:
                self._finished += 1
                self._finished_changed.notify_all()
