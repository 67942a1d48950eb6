"""Python's cycle collector paused for one burst of allocation (a Kafka range read, an admin cycle).

Why: code that builds hundreds of thousands of small tracked objects (records, samples, futures)
makes the collector run every few hundred allocations and, as those lists age, ever more full
passes over the whole heap; that work finds nothing to free, since reference counting frees
these objects. Paused, the collector runs once the burst ends and collects any reference cycles
made meanwhile. Nested or concurrent pauses are safe: each re-enables only what it disabled, so
the collector is never left off.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def cyclic_gc_paused() -> Iterator[None]:
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
