"""The cycle collector's pause and a worker's startup freeze, each in a fresh interpreter
(a freeze is for the life of a process, so it must not touch the test runner's own)."""

from __future__ import annotations

import json
import subprocess
import sys

FREEZE_PROBE = """
import gc, json
import pandas  # what a Spark Python worker has loaded by its first task
from lagwatch.gc_pause import freeze_startup_objects

freeze_startup_objects()
frozen_first = gc.get_freeze_count()
made_later = [[] for _ in range(1000)]
freeze_startup_objects()  # a later task: nothing more is frozen
frozen_again = gc.get_freeze_count()

class Node:
    pass

def cycle() -> None:
    a, b = Node(), Node()
    a.other, b.other = b, a

gc.collect()
for _ in range(50):
    cycle()
collected = gc.collect()
print(json.dumps({"first": frozen_first, "again": frozen_again, "collected": collected}))
"""


def _probe(code: str) -> dict[str, int]:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_startup_objects_are_frozen_once_and_later_cycles_still_collected() -> None:
    seen = _probe(FREEZE_PROBE)
    assert seen["first"] > 10_000, seen  # pandas' objects left the collector's passes
    assert seen["again"] == seen["first"], seen  # objects of a later task are not frozen
    assert seen["collected"] >= 100, seen  # 50 cycles of two objects (and their dicts) made after the freeze


PAUSE_PROBE = """
import gc, json
from lagwatch.gc_pause import cyclic_gc_paused

with cyclic_gc_paused():
    inside = gc.isenabled()
    with cyclic_gc_paused():
        pass
    still_off = gc.isenabled()
print(json.dumps({"inside": int(inside), "still_off": int(still_off), "after": int(gc.isenabled())}))
"""


def test_pause_nests_and_always_re_enables() -> None:
    assert _probe(PAUSE_PROBE) == {"inside": 0, "still_off": 0, "after": 1}
