"""Backend `jpype`: one persistent JMX connection per target from a JVM inside this process.

Why: jmxquery pays a JVM start per scrape; a kept-open JMXConnector costs a small fraction of
that (figures in bench/RECORDS.md and docs/metrics.md, "JMX backends"), which is what lets
one collector scrape hundreds of brokers.
What it takes to be safe:
- One JVM per process (JPype cannot restart it): started lazily by the first jpype target,
  never shut down, with the RMI client timeouts set as system properties BEFORE it starts
  (the RMI transport reads them once) and `-Xrs` so SIGTERM/SIGINT stay with Python.
- Connect and every read run in a worker thread with the scrape's own deadline: RMI has no
  per-call deadline and a port that accepts but never answers would otherwise block.
- A connection that fails (broker restarted, network cut) is dropped and reopened once within
  the same scrape, so the first scrape after a restart already reads.
- Reads are batched: one queryNames per ObjectName pattern, one getAttributes per MBean.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any

import jpype

from collectors.jmx.backend import (
    JmxEndpoint,
    Reading,
    ReadResult,
    RemoteJmxBackend,
    ScrapeWorker,
    TargetDown,
    as_number,
    missing_errors,
)
from collectors.jmx.mapping import MetricDef, sample_labels
from lagwatch.java import JDK_FIX, JdkMissing

log = logging.getLogger(__name__)

_jvm_lock = threading.Lock()
#: The optimising compiler (C2) stays on, unlike in the Spark job's JVM: here the JVM does the
#: work (RMI calls and their serialisation), and the quick compiler alone costs more CPU per
#: scrape (bench/RECORDS.md, "JMX backends").
JVM_OPTIONS = ("-Xmx128m", "-XX:+UseSerialGC", "-Xrs")


def ensure_jvm(rmi_timeout_s: float, jvm_path: str = "") -> None:
    """Start this process's JVM once, with RMI timeouts; later calls are no-ops."""
    with _jvm_lock:
        if jpype.isJVMStarted():
            return
        timeout_ms = str(max(1, int(rmi_timeout_s * 1000)))
        properties = [
            f"-Dsun.rmi.transport.tcp.responseTimeout={timeout_ms}",
            f"-Dsun.rmi.transport.proxy.connectTimeout={timeout_ms}",
            f"-Dsun.rmi.transport.tcp.handshakeTimeout={timeout_ms}",
            f"-Dsun.rmi.transport.connectionTimeout={timeout_ms}",
        ]
        path = _jvm_library(jvm_path)
        log.info("starting the in-process JVM for JMX (%s, RMI timeouts %s ms)", path, timeout_ms)
        try:
            jpype.startJVM(path, *JVM_OPTIONS, *properties, convertStrings=False)
        except OSError as exc:  # jpype's "JVM DLL not found" for a path that is no JVM library
            raise JdkMissing(f"the jpype JMX backend could not load the JVM at {path} ({exc}): {_JVM_FIX}") from None


_JVM_FIX = f"{JDK_FIX}, or point jmx.jvm_path at a libjvm.so"


def _jvm_library(jvm_path: str) -> str:
    """`jmx.jvm_path`, else the JVM jpype finds (JAVA_HOME, then the system's default)."""
    if jvm_path:
        return jvm_path
    try:
        return str(jpype.getDefaultJVMPath())
    except jpype.JVMNotFoundException as exc:
        raise JdkMissing(f"the jpype JMX backend found no JVM ({exc}): {_JVM_FIX}") from None


@contextlib.contextmanager
def _attached_daemon() -> Iterator[None]:
    """Attach a worker thread as a JVM daemon (never holds the JVM open) and detach it after."""
    thread = jpype.JClass("java.lang.Thread")
    thread.attachAsDaemon()
    try:
        yield
    finally:
        thread.detach()


class JpypeBackend(RemoteJmxBackend):
    def __init__(self, endpoint: JmxEndpoint, jvm_path: str = "", rmi_timeout_s: float | None = None) -> None:
        super().__init__(endpoint)
        self.jvm_path = jvm_path
        self.rmi_timeout_s = rmi_timeout_s or endpoint.timeout_s
        self._connector: Any = None
        self._connection: Any = None
        self._lock = threading.Lock()  # one scrape at a time per target
        self._worker: ScrapeWorker | None = None
        #: Exact ObjectNames that answered InstanceNotFound, asked with queryNames from then on (an
        #: empty answer, no exception): jpype keeps every caught Java exception's traceback alive,
        #: so an absent MBean read every cycle would grow the process without bound
        #: (bench/RECORDS.md, "Collector memory over time"). At most one name per definition.
        self._absent: set[str] = set()

    def read(self, definitions: Sequence[MetricDef]) -> ReadResult:
        ensure_jvm(self.rmi_timeout_s, self.jvm_path)
        result = ReadResult()
        valid = self.split_valid(definitions, result)
        if not self._lock.acquire(timeout=self.timeout_s):
            raise TargetDown(f"{self.url}: previous scrape still running")
        try:
            if self._worker is None or not self._worker.alive:
                self._worker = ScrapeWorker(self.url, _attached_daemon)
            self._worker.call(lambda: self._read_reconnecting(valid, result), self.timeout_s, self.url)
        except TargetDown:
            self._drop_connection()
            raise
        finally:
            self._lock.release()
        result.errors.extend(missing_errors(definitions, result.readings, result.errors))
        return result

    def close(self) -> None:
        self._drop_connection()
        if self._worker is not None:
            self._worker.retire()
            self._worker = None

    def _read_reconnecting(self, definitions: Sequence[MetricDef], result: ReadResult) -> None:
        """Read on the kept connection; if it broke (target restarted), reconnect once and retry."""
        io_error = jpype.JClass("java.io.IOException")
        had_connection = self._connection is not None
        kept_errors = len(result.errors)  # bad-ObjectName errors found before the read
        try:
            self._read_all(self._connect(), definitions, result)
        except io_error as exc:
            self._drop_connection()
            if not had_connection:
                raise TargetDown(f"{self.url}: {_java_message(exc)}") from None
            log.info("%s: connection lost (%s); reconnecting", self.url, _java_message(exc))
            result.readings.clear()
            del result.errors[kept_errors:]
            try:
                self._read_all(self._connect(), definitions, result)
            except io_error as again:
                self._drop_connection()
                raise TargetDown(f"{self.url}: {_java_message(again)}") from None
        except jpype.JClass("java.lang.SecurityException") as exc:
            self._drop_connection()
            raise TargetDown(f"{self.url}: authentication failed: {_java_message(exc)}") from None

    def _connect(self) -> Any:
        if self._connection is not None:
            return self._connection
        started = time.monotonic()
        factory = jpype.JClass("javax.management.remote.JMXConnectorFactory")
        service_url = jpype.JClass("javax.management.remote.JMXServiceURL")(self.url)
        environment = jpype.JClass("java.util.HashMap")()
        if self.username:
            credentials = jpype.JArray(jpype.JString)([self.username, self.password or ""])
            environment.put("jmx.remote.credentials", credentials)
        self._connector = factory.connect(service_url, environment)
        self._connection = self._connector.getMBeanServerConnection()
        log.info("%s: connected in %.0f ms", self.url, (time.monotonic() - started) * 1000)
        return self._connection

    def _drop_connection(self) -> None:
        connector, self._connector, self._connection = self._connector, None, None
        if connector is not None:
            threading.Thread(target=_close_quietly, args=(connector,), daemon=True).start()

    def _read_all(self, connection: Any, definitions: Sequence[MetricDef], result: ReadResult) -> None:
        object_name = jpype.JClass("javax.management.ObjectName")
        by_name: dict[str, list[MetricDef]] = {}
        for definition in definitions:
            by_name.setdefault(definition.object_name, []).append(definition)
        for name, group in by_name.items():
            exact = not group[0].is_pattern
            if exact and name not in self._absent:
                concrete = [object_name(name)]
            else:  # a pattern, or an exact name known absent: an empty answer instead of an exception
                concrete = list(connection.queryNames(object_name(name), None))
                if exact and concrete:
                    self._absent.discard(name)  # registered since: read it as before
            read = self._single_attribute if len(group) == 1 else self._several_attributes
            for mbean in concrete:
                if not read(connection, mbean, group, result) and exact:
                    self._absent.add(name)

    def _single_attribute(self, connection: Any, mbean: Any, group: list[MetricDef], result: ReadResult) -> bool:
        """The common case (one attribute per MBean): getAttribute, the cheapest RMI round trip.
        False when the MBean is not registered."""
        definition = group[0]
        try:
            value = connection.getAttribute(mbean, _java_string(definition.attribute))
        except jpype.JClass("javax.management.InstanceNotFoundException"):
            return False  # reported by missing_errors for exact names; a vanished pattern match is normal
        except jpype.JClass("javax.management.JMException") as exc:
            result.errors.append(f"{mbean}/{definition.attribute}: {_java_message(exc)}")
            return True
        self._add_reading(mbean, definition, value, result)
        return True

    def _several_attributes(self, connection: Any, mbean: Any, group: list[MetricDef], result: ReadResult) -> bool:
        """getAttributes of one MBean; False when it is not registered."""
        attributes = jpype.JArray(jpype.JString)([d.attribute for d in group])
        try:
            values = {str(a.getName()): a.getValue() for a in connection.getAttributes(mbean, attributes).asList()}
        except jpype.JClass("javax.management.InstanceNotFoundException"):
            return False
        except jpype.JClass("javax.management.JMException") as exc:
            result.errors.append(f"{mbean}: {_java_message(exc)}")
            return True
        for definition in group:
            if definition.attribute in values:  # absent attributes are reported by missing_errors
                self._add_reading(mbean, definition, values[definition.attribute], result)
        return True

    @staticmethod
    def _add_reading(mbean: Any, definition: MetricDef, raw: Any, result: ReadResult) -> None:
        number = as_number(_to_python(raw))
        if number is None:
            result.errors.append(f"{mbean}/{definition.attribute}: value {raw!s:.80} is not a number")
            return
        labels = sample_labels(definition, {k: str(mbean.getKeyProperty(k)) for k in definition.label_keys})
        result.readings.append(Reading(definition, labels, number))


@functools.lru_cache(maxsize=1024)
def _java_string(text: str) -> Any:
    """Attribute names as Java Strings, converted once instead of on every RMI call."""
    return jpype.JString(text)


def _to_python(value: Any) -> object:
    """Boxed java.lang numbers to Python numbers; anything else stays as it is (not a number)."""
    if value is None:
        return None
    if isinstance(value, int | float):
        return value
    if isinstance(value, jpype.JClass("java.lang.Number")):
        return float(value.doubleValue())
    return str(value)


def _java_message(exc: Any) -> str:
    message = exc.getMessage() if hasattr(exc, "getMessage") else str(exc)
    return f"{type(exc).__name__}: {str(message or '').splitlines()[0] if message else ''}"[:300]


def _close_quietly(connector: Any) -> None:
    """Closing a connector to a dead target can block on RMI; done off the scrape's thread."""
    try:
        with _attached_daemon():
            connector.close()
    except Exception as exc:  # a dead connection may fail to close; it is dropped either way
        log.debug("closing JMX connector failed: %s", exc)
