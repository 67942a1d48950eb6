"""SIGTERM / SIGINT stop a process's loop by setting a threading.Event, without deadlocking it.

Why not ``event.set()`` in the signal handler: a Python handler runs on the main thread between
two bytecodes, possibly while that thread holds a lock the handler needs, such as the Condition
inside the very ``Event.wait()`` it interrupted, or a logging handler's lock. The handler then
waits for its own thread forever, and the process ignores every later SIGTERM. Here the handler
does nothing in Python: the interpreter's C handler writes the signal number to a pipe
(``signal.set_wakeup_fd``), and a watcher thread reads it, logs, and sets the event.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)

STOP_SIGNALS: tuple[signal.Signals, ...] = (signal.SIGTERM, signal.SIGINT)


def stop_on_signals(stop: threading.Event, what: str) -> Callable[[], None]:
    """Set `stop` on SIGTERM or SIGINT, logging "received SIGTERM: <what>"; returns a function
    that puts the previous handlers back. Call it from the main thread (as signal.signal requires)."""
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)
    previous_fd = signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
    previous = {signum: signal.signal(signum, _noted_by_the_wakeup_fd) for signum in STOP_SIGNALS}
    watcher = threading.Thread(target=_watch, args=(read_fd, stop, what), name="stop-signals", daemon=True)
    watcher.start()

    def restore() -> None:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        signal.set_wakeup_fd(previous_fd)
        os.close(write_fd)  # the watcher reads end-of-file and ends

    return restore


def _noted_by_the_wakeup_fd(_signum: int, _frame: object) -> None:
    """The C handler has already written the signal number to the wakeup pipe."""


def _watch(read_fd: int, stop: threading.Event, what: str) -> None:
    with os.fdopen(read_fd, "rb", buffering=0) as pipe:
        while data := pipe.read(1):
            if data[0] in STOP_SIGNALS:
                log.info("received %s: %s", signal.Signals(data[0]).name, what)
                stop.set()
