"""A step of the admin cycle that runs on its own thread beside the rest of the cycle, and says
once (not every cycle) why it cannot read.

Why a thread: the readers over Lagwatch's own protocol connections (share groups, partition
sizes) wait on brokers one by one; run beside the cycle's other requests, they do not add their
time to the cycle's, and the cycle collects their answer at the end, within its deadline.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Generic, TypeVar

R = TypeVar("R")


class CycleStep(Generic[R]):
    """One reader's thread, and the reason it last gave for not reading (said once, in the
    reader's own logger, so its lines keep their module's name)."""

    def __init__(self, name: str, thread_name: str, log: logging.Logger, level: int = logging.INFO) -> None:
        self._name = name
        self._log = log
        self._level = level
        self._said: str | None = None
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix=thread_name)

    def begin(self, read: Callable[[], R], deadline: float, timed_out: Callable[[], R]) -> Callable[[], R]:
        """Start `read`; the returned call waits for its answer until the deadline (then `timed_out()`)."""
        running = self._thread.submit(read)

        def finish() -> R:
            try:
                return running.result(timeout=max(0.0, deadline - time.monotonic()) + 1.0)
            except TimeoutError:
                return timed_out()

        return finish

    def say(self, why: str) -> None:
        """Log `why` unless it is what was said last."""
        if why != self._said:
            self._log.log(self._level, "%s: %s", self._name, why)
            self._said = why

    def reading_again(self) -> None:
        """The step read: a reason given next is said again."""
        self._said = None

    def close(self) -> None:
        self._thread.shutdown(wait=False, cancel_futures=True)
