"""The one small interface every JMX backend implements, and the types it returns.

A backend reads the mapping table's definitions from one target and returns raw readings
(definition, labels, value) plus per-metric errors. It raises `TargetDown` when the target
itself does not answer (refused, timed out, authentication failed); the collector turns that
into a failed scrape (up = 0). Turning readings into samples is the collector's job, so the
three backends cannot drift apart in labels or kinds.
"""

from __future__ import annotations

import math
import queue
import threading
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

from collectors.jmx.mapping import MetricDef, object_name_problem

T = TypeVar("T")


class TargetDown(Exception):
    """The target did not answer within its timeout, refused, or rejected the credentials."""


@dataclass(frozen=True)
class Reading:
    definition: MetricDef
    labels: dict[str, str]
    value: float


@dataclass
class ReadResult:
    readings: list[Reading] = field(default_factory=list)
    #: Per-metric problems ("kafka.server:…/Count: no such MBean"); the other metrics still count.
    errors: list[str] = field(default_factory=list)


class JmxBackend(Protocol):
    def read(self, definitions: Sequence[MetricDef]) -> ReadResult:
        """Read every definition once; raise TargetDown when the target does not answer."""
        ...

    def close(self) -> None: ...


def as_number(value: object) -> float | None:
    """A finite float from a JMX/JSON value, or None for strings, NaN and other non-numbers."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float):
        number = float(value)
        return number if math.isfinite(number) else None
    return None


def missing_errors(definitions: Sequence[MetricDef], readings: Sequence[Reading], errors: Sequence[str]) -> list[str]:
    """Errors for exact ObjectNames that produced nothing.

    A pattern matching nothing is normal, and so is a ZooKeeper-only MBean missing on a KRaft broker.
    """
    read = {id(r.definition) for r in readings}
    already = " ".join(errors)
    return [
        f"{d.query()}: no such MBean or attribute"
        for d in definitions
        if not d.is_pattern and not d.zookeeper_only and id(d) not in read and d.query() not in already
    ]


def call_with_timeout(
    work: Callable[[], T], timeout_s: float, what: str, thread_context: Callable[[], AbstractContextManager[object]]
) -> T:
    """Run `work` in a daemon thread and wait at most `timeout_s` for it.

    Why a thread: RMI has no per-call deadline, and a port that accepts but never answers can
    block a read far longer than the scrape timeout. The caller gets TargetDown on time; the
    abandoned thread ends when the socket times out (RMI response timeout) or the process exits.
    """
    outcome: dict[str, object] = {}
    done = threading.Event()

    def runner() -> None:
        try:
            with thread_context():
                outcome["value"] = work()
        except BaseException as exc:
            outcome["error"] = exc
        finally:
            done.set()

    threading.Thread(target=runner, name=f"jmx-{what}", daemon=True).start()
    if not done.wait(timeout_s):
        raise TargetDown(f"{what}: no answer within {timeout_s:g} s")
    if "error" in outcome:
        raise outcome["error"]  # type: ignore[misc]
    return outcome["value"]  # type: ignore[return-value]


class ScrapeWorker:
    """A long-lived daemon thread that runs one target's calls, each bounded by a timeout.

    Why not a thread per call: attaching a thread to the in-process JVM costs more CPU than a
    whole small scrape. A worker whose call timed out is retired (it exits once the hung call
    returns, bounded by the RMI timeouts) and the owner starts a fresh one.
    """

    def __init__(self, name: str, thread_context: Callable[[], AbstractContextManager[object]]) -> None:
        self._jobs: queue.SimpleQueue[tuple[Callable[[], object], dict[str, object], threading.Event] | None]
        self._jobs = queue.SimpleQueue()
        self._context = thread_context
        self._thread = threading.Thread(target=self._loop, name=f"jmx-{name}", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        with self._context():
            while (job := self._jobs.get()) is not None:
                work, outcome, done = job
                try:
                    outcome["value"] = work()
                except BaseException as exc:
                    outcome["error"] = exc
                finally:
                    done.set()

    def call(self, work: Callable[[], T], timeout_s: float, what: str) -> T:
        """Run `work` on the worker; TargetDown (and a retired worker) if it overruns."""
        outcome: dict[str, object] = {}
        done = threading.Event()
        self._jobs.put((work, outcome, done))
        if not done.wait(timeout_s):
            self.retire()
            raise TargetDown(f"{what}: no answer within {timeout_s:g} s")
        if "error" in outcome:
            raise outcome["error"]  # type: ignore[misc]
        return outcome["value"]  # type: ignore[return-value]

    @property
    def alive(self) -> bool:
        return self._thread.is_alive() and not getattr(self, "_retired", False)

    def retire(self) -> None:
        self._retired = True
        self._jobs.put(None)


@dataclass(frozen=True)
class JmxEndpoint:
    """A remote JMX (RMI) endpoint, the scrape timeout and the credentials (password from the env)."""

    host: str
    port: int
    timeout_s: float
    username: str | None = None
    password: str | None = None

    @property
    def url(self) -> str:
        return f"service:jmx:rmi:///jndi/rmi://{self.host}:{self.port}/jmxrmi"


class RemoteJmxBackend:
    """What the two remote-JMX backends share: the endpoint, its credentials, name validation."""

    def __init__(self, endpoint: JmxEndpoint) -> None:
        self.url = endpoint.url
        self.timeout_s = endpoint.timeout_s
        self.username = endpoint.username
        self.password = endpoint.password

    @staticmethod
    def split_valid(definitions: Sequence[MetricDef], result: ReadResult) -> list[MetricDef]:
        """Definitions with a valid ObjectName; the others become per-metric errors in `result`."""
        valid = []
        for definition in definitions:
            problem = object_name_problem(definition.object_name)
            if problem:
                result.errors.append(f"{definition.query()}: bad ObjectName: {problem}")
            else:
                valid.append(definition)
        return valid
