"""`lagwatch up`: how long Ctrl-C takes to stop everything, and how long after a SIGKILL of the
supervisor its children are gone.

Runs the shipped config (embedded broker, demo, collectors, Spark job, dashboard + alerts) in a
scratch folder, lets the pipeline stream for a while so the Spark job is mid-work, then sends
SIGINT (what Ctrl-C sends) and times until no process of the run is left. A second run is
SIGKILLed instead: its children get SIGTERM from the kernel and stop on their own.
"""

from __future__ import annotations

import signal
import tempfile
import time
from pathlib import Path

from bench.common import Result
from harness.local_stack import LocalStack

#: Bar: everything gone within 10 s of Ctrl-C.
STOP_BAR_S = 10.0
#: Seconds the stack streams before it is stopped (several Spark batches and collector cycles).
RUN_S = 20.0


def _stopped_after(signum: signal.Signals) -> tuple[float, float]:
    """(seconds until the supervisor exited, seconds until every process of the run was gone)."""
    with tempfile.TemporaryDirectory(prefix="lagwatch-bench-stack-") as work:
        stack = LocalStack(Path(work))
        process = stack.start()
        try:
            stack.wait_up()
            time.sleep(RUN_S)
            started = time.monotonic()
            process.send_signal(signum)
            process.wait(120)
            supervisor_s = time.monotonic() - started
            stack.wait_gone(120)
            return supervisor_s, time.monotonic() - started
        finally:
            stack.kill_everything()
            process.wait()


def run() -> list[Result]:
    supervisor_s, gone_s = _stopped_after(signal.SIGINT)
    _, orphans_s = _stopped_after(signal.SIGKILL)
    return [
        Result(
            "lagwatch up: every process gone after Ctrl-C",
            gone_s,
            "s",
            STOP_BAR_S,
            "max",
            f"supervisor exited after {supervisor_s:.1f} s; stack streamed {RUN_S:.0f} s first",
        ),
        Result(
            "lagwatch up: children gone after SIGKILL of the supervisor",
            orphans_s,
            "s",
            None,
            "max",
            "children stop on the kernel's SIGTERM (PR_SET_PDEATHSIG); no orphan is left",
        ),
    ]
