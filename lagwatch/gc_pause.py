"""Python's cycle collector kept off work that finds nothing to free.

Paused for one burst of allocation (a Kafka range read, an admin cycle): code that builds
hundreds of thousands of small tracked objects (records, samples, futures)
makes the collector run every few hundred allocations and, as those lists age, ever more full
passes over the whole heap; that work finds nothing to free, since reference counting frees
these objects. Paused, the collector runs once the burst ends and collects any reference cycles
made meanwhile. Nested or concurrent pauses are safe: each re-enables only what it disabled, so
the collector is never left off.

Frozen once for a Spark Python worker's startup objects (:func:`freeze_startup_objects`): PySpark's
daemon runs a full collection after every task a reused worker finishes, and with pandas, pyarrow
and the job's modules loaded each pass walks tens of thousands of objects that live as long as the worker.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

_startup_frozen = False


@contextlib.contextmanager
def cyclic_gc_paused() -> Iterator[None]:
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def freeze_startup_objects() -> None:
    """Move every object alive now out of the collector's passes, once per process.

    Call it at the start of a worker's task: what is alive then is the imported code, which is
    never garbage. Objects made later are collected as before, cycles included; only a cycle among
    the frozen objects that later becomes garbage would stay, and modules make none.
    """
    global _startup_frozen
    if not _startup_frozen:
        gc.freeze()
        _startup_frozen = True
