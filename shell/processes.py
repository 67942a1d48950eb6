"""Supervised child processes that never outlive their supervisor, and process trees read from /proc.

A supervisor (`lagwatch up`) starts each child in its own session, so a terminal's Ctrl-C reaches
only the supervisor, which then stops the children itself. Their own session also means nothing
stops them when the supervisor is killed outright, so each child asks the kernel for SIGTERM when
its parent dies (PR_SET_PDEATHSIG), and the supervisor makes itself a child subreaper: a
grandchild orphaned by a child that died first (a Spark JVM, Streamlit) is re-parented to the
supervisor instead of init, so the final sweep still finds it. Linux only, like the rest of the
local stack.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import signal
import subprocess
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from shell.broker import die_with_parent

log = logging.getLogger(__name__)

_PR_SET_CHILD_SUBREAPER = 36


@dataclass(frozen=True)
class Proc:
    """A process as /proc shows it; the start time tells a reused pid from the original."""

    pid: int
    ppid: int
    start_ticks: int


def spawn(command: list[str], env: dict[str, str], output: IO[bytes] | int, nice: int = 0) -> subprocess.Popen[bytes]:
    """Start `command` in its own session, `nice` steps below this process's CPU priority; it
    gets SIGTERM if this process dies, even by SIGKILL."""

    def prepare_child() -> None:
        die_with_parent()
        if nice:
            os.nice(nice)

    return subprocess.Popen(
        command, env=env, stdout=output, stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=prepare_child
    )


def become_subreaper() -> None:
    """Orphaned descendants are re-parented to this process (so they stay in its tree)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1)


def _read(pid: int) -> Proc | None:
    """One process from /proc/<pid>/stat; None if it is gone or already a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name is in parentheses and may hold spaces: parse after the last ')'.
    fields = stat[stat.rindex(")") + 2 :].split()
    if fields[0] in ("Z", "X"):
        return None
    return Proc(pid, int(fields[1]), int(fields[19]))


def all_processes() -> list[Proc]:
    found = (_read(int(entry.name)) for entry in Path("/proc").iterdir() if entry.name.isdigit())
    return [proc for proc in found if proc is not None]


def descendants(pid: int) -> list[Proc]:
    """Every live process below `pid` (children, their children, …)."""
    children: dict[int, list[Proc]] = {}
    for proc in all_processes():
        children.setdefault(proc.ppid, []).append(proc)
    found: list[Proc] = []
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child.pid)
    return found


def is_alive(proc: Proc) -> bool:
    current = _read(proc.pid)
    return current is not None and current.start_ticks == proc.start_ticks


def kill(procs: Iterable[Proc], signum: signal.Signals = signal.SIGKILL) -> list[Proc]:
    """Send `signum` to each process that is still the one recorded; return those signalled."""
    signalled = []
    for proc in procs:
        if is_alive(proc):
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signum)
                signalled.append(proc)
    return signalled


def reap() -> None:
    """Collect exited adopted descendants (a subreaper must, or they linger as zombies)."""
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass


def stop_all(children: dict[str, subprocess.Popen[bytes]], grace_s: float) -> dict[str, float | None]:
    """SIGTERM every child at once; after `grace_s`, SIGKILL what is left of their process trees.

    Returns each child's stop time in seconds, None for one that had to be killed. The trees
    are recorded before the signal and again at the deadline, so a grandchild is killed even if
    its parent exited without stopping it.
    """
    started = time.monotonic()
    running = {name: p for name, p in children.items() if p.poll() is None}
    trees = {proc for p in running.values() for proc in descendants(p.pid)}
    for process in running.values():
        process.send_signal(signal.SIGTERM)
    stopped: dict[str, float | None] = {}
    while len(stopped) < len(running) and time.monotonic() - started < grace_s:
        for name, process in running.items():
            if name not in stopped and process.poll() is not None:
                stopped[name] = time.monotonic() - started
                log.info("stopped %s in %.1f s", name, stopped[name])
        time.sleep(0.05)
    late = {name: p for name, p in running.items() if name not in stopped}
    for name, process in late.items():
        trees.update(descendants(process.pid))
        log.warning("%s did not stop within %.0f s of SIGTERM: killing it and its processes", name, grace_s)
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        stopped[name] = None
    kill(trees)
    for process in running.values():
        process.wait()
    reap()
    return stopped
