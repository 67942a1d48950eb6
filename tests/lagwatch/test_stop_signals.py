"""SIGTERM stops a loop that waits on its stop event, however often the signal lands inside the wait."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest

from harness.processes import ROOT

#: A process whose main thread spends nearly all its time inside Event.wait (holding the event's
#: lock on the way in and out), the moment where setting the event from a handler deadlocked.
BUSY_WAITER = """
import logging, sys, threading
from lagwatch.stop_signals import stop_on_signals
logging.basicConfig(level=logging.INFO, stream=sys.stdout, format="%(message)s")
stop = threading.Event()
stop_on_signals(stop, "stopping the test loop")
print("waiting", flush=True)
while not stop.wait(0.00001):
    pass
print("stopped", flush=True)
"""


def _start_waiter() -> subprocess.Popen[str]:
    waiter = subprocess.Popen(
        [sys.executable, "-c", BUSY_WAITER], cwd=ROOT, stdout=subprocess.PIPE, text=True, env={"PYTHONPATH": str(ROOT)}
    )
    assert waiter.stdout is not None and waiter.stdout.readline().strip() == "waiting"
    return waiter


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_every_stop_signal_ends_the_wait_and_is_logged(signum: signal.Signals) -> None:
    for _ in range(15):
        waiter = _start_waiter()
        time.sleep(0.05)
        waiter.send_signal(signum)
        try:
            out, _ = waiter.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            waiter.kill()
            pytest.fail(f"the waiter did not stop within 10 s of {signum.name}")
        assert waiter.returncode == 0
        assert out.splitlines() == [f"received {signum.name}: stopping the test loop", "stopped"]


def test_restore_puts_the_previous_handlers_back() -> None:
    import threading

    from lagwatch.stop_signals import stop_on_signals

    before = signal.getsignal(signal.SIGTERM)
    restore = stop_on_signals(threading.Event(), "nothing")
    assert signal.getsignal(signal.SIGTERM) is not before
    restore()
    assert signal.getsignal(signal.SIGTERM) is before
