"""JMX collector: CPU milliseconds per broker scrape per backend at 60, 600 and 2,000 MBean values,
and of a real Kafka broker's own MBeans.

Setup: the JMX test double (harness/jmx/KafkaJmxDouble.java, a real JVM) with extra
per-topic BrokerTopicMetrics MBeans so one scrape reads about N values (3 Meter Counts per extra
topic plus the 15 other broker values); for the prometheus backend, exporter text with the same N
mapped samples served by a separate `python -m http.server` process.

Measured: CPU (user + system) of this process per scrape, plus its waited-for children
(jmxquery's per-scrape JVM, via RUSAGE_CHILDREN deltas). The in-process JVM of the jpype
backend is part of this process, so its CPU is included. The double's and the HTTP server's
CPU are not (they are the monitored side). Bar: jpype ≤ 5 ms per 100 MBeans.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench.common import Result
from collectors.jmx.backend import JmxEndpoint, ReadResult
from collectors.jmx.jmxquery_backend import JmxqueryBackend
from collectors.jmx.jpype_backend import JpypeBackend
from collectors.jmx.mapping import MetricDef, metrics_for, object_name_problem
from collectors.jmx.prometheus_backend import PrometheusBackend
from harness.jmx_double import JmxDouble, compile_double
from harness.real_kafka import RealKafkaBroker
from shell.broker import free_port

SIZES = (60, 600, 2_000)
BASE_VALUES = 15  # broker values of the double without per-topic MBeans
SCRAPES = {"jpype": 30, "prometheus": 20, "jmxquery": 3}
#: jpype is measured in steady state: the in-process JVM's JIT (C2) needs tens of thousands of
#: RMI calls before the per-call cost settles; a collector runs for days, so that is its cost.
WARMUP_MBEAN_READS = 60_000
WARMUP_MAX_S = 40
JPYPE_BAR_MS_PER_100 = 5.0
TIMEOUT_S = 30


def progress(message: str) -> None:
    print(f"bench_jmx: {message}", file=sys.stderr, flush=True)


def cpu_with_children_s() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def warm_up(read: Callable[[], ReadResult]) -> None:
    """Scrape until the JVM's JIT has seen WARMUP_MBEAN_READS reads (or WARMUP_MAX_S passed)."""
    reads, deadline = 0, time.monotonic() + WARMUP_MAX_S
    while reads < WARMUP_MBEAN_READS and time.monotonic() < deadline:
        reads += len(read().readings)


def measure(read: Callable[[], ReadResult], scrapes: int) -> tuple[float, int]:
    """(CPU ms per scrape, values per scrape) after one warm-up read (connect)."""
    values = len(read().readings)
    started = cpu_with_children_s()
    for _ in range(scrapes):
        got = len(read().readings)
        if got != values:
            raise RuntimeError(f"scrape read {got} values, expected {values}")
    return (cpu_with_children_s() - started) * 1000 / scrapes, values


def exporter_text(values: int) -> str:
    lines = [f"kafka_server_replicamanager_partitioncount {values}"]
    topics = (values - 1) // 3 + 1
    for topic in range(topics):
        for name in ("messagesin", "bytesin", "bytesout"):
            lines.append(f'kafka_server_brokertopicmetrics_{name}_total{{topic="bench-{topic:05d}"}} {topic * 7}')
    return "\n".join(lines[:values]) + "\n"


def bench_prometheus(size: int, workdir: Path) -> Result:
    folder = workdir / f"prom-{size}"
    folder.mkdir()
    (folder / "metrics").write_text(exporter_text(size))
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory", str(folder)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        backend = PrometheusBackend(f"http://127.0.0.1:{port}/metrics", TIMEOUT_S)
        for _ in range(100):
            try:
                backend.read(metrics_for("broker"))
                break
            except Exception:
                time.sleep(0.1)
        ms, values = measure(lambda: backend.read(metrics_for("broker")), SCRAPES["prometheus"])
    finally:
        server.terminate()
        server.wait(10)
    return Result(f"prometheus CPU per scrape, {values} values", round(ms, 2), "ms", note="HTTP GET + parse")


def bench_endpoint(port: int, label: str = "") -> list[Result]:
    """jpype (steady state) and jmxquery CPU per scrape of one JMX endpoint; `label` names a non-double target."""
    results = []
    definitions = metrics_for("broker")
    suffix = f" ({label})" if label else ""
    jpype = JpypeBackend(JmxEndpoint("127.0.0.1", port, TIMEOUT_S))
    cold_ms, _ = measure(lambda: jpype.read(definitions), 3)
    warm_up(lambda: jpype.read(definitions))
    ms, values = measure(lambda: jpype.read(definitions), SCRAPES["jpype"])
    jpype.close()
    progress(f"jpype: {values} values, {ms:.2f} ms CPU per scrape")
    results.append(Result(f"jpype CPU per scrape, {values} MBean values{suffix}", round(ms, 2), "ms"))
    results.append(
        Result(
            f"jpype CPU per 100 MBeans ({values} values){suffix}",
            round(ms * 100 / values, 2),
            "ms",
            bar=JPYPE_BAR_MS_PER_100,
            direction="max",
            note=f"steady state (first scrapes {cold_ms * 100 / values:.0f} ms/100); one RMI call per MBean; "
            f"load avg {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores",
        )
    )
    jmxquery = JmxqueryBackend(JmxEndpoint("127.0.0.1", port, TIMEOUT_S))
    ms, values = measure(lambda: jmxquery.read(definitions), SCRAPES["jmxquery"])
    progress(f"jmxquery: {values} values, {ms:.0f} ms CPU per scrape")
    results.append(
        Result(f"jmxquery CPU per scrape, {values} MBean values{suffix}", round(ms, 1), "ms", note="one JVM per scrape")
    )
    return results


def bench_real_broker(workdir: Path) -> list[Result]:
    """The same scrape of a real Kafka broker's own MBeans (after the double's runs warmed the JIT)."""
    progress("starting a real Kafka broker")
    with RealKafkaBroker(work_dir=workdir / "kafka") as kafka:
        return bench_endpoint(kafka.jmx_port, "real Kafka broker")


def bench_jmxquery_bisection(double: JmxDouble) -> list[Result]:
    """Cost of the jmxquery defect work-arounds: name validation, and bisecting a rejected batch."""
    definitions = metrics_for("broker")
    started = time.perf_counter()
    for _ in range(1000):
        for definition in definitions:
            object_name_problem(definition.object_name)
    validation_us = (time.perf_counter() - started) * 1e6 / 1000
    backend = JmxqueryBackend(JmxEndpoint("127.0.0.1", double.port, TIMEOUT_S))
    bad = MetricDef("bad", "kafka.server:type=a,name=b,c", "Value", "broker")  # the jar rejects it
    before = cpu_with_children_s()
    backend.read_batch([*definitions, bad], time.monotonic() + TIMEOUT_S, ReadResult())
    bisect_ms = (cpu_with_children_s() - before) * 1000
    return [
        Result("jmxquery ObjectName validation per scrape", round(validation_us, 1), "µs", note="pure Python"),
        Result(
            "jmxquery scrape with one jar-rejected name (bisected)",
            round(bisect_ms, 1),
            "ms",
            note=f"{backend.jvm_runs} JVMs for {len(definitions) + 1} queries",
        ),
    ]


def run() -> list[Result]:
    results: list[Result] = []
    with tempfile.TemporaryDirectory(prefix="bench-jmx-") as tmp:
        workdir = Path(tmp)
        progress("compiling the JMX test double")
        classpath = compile_double(workdir / "classes")
        for size in SIZES:
            extra = max(0, round((size - BASE_VALUES) / 3))
            progress(f"{size} values: starting the double with {extra} extra topics")
            double = JmxDouble(classpath, topics=(), extra_topics=extra).start()
            try:
                results.extend(bench_endpoint(double.port))
                if size == SIZES[0]:
                    results.extend(bench_jmxquery_bisection(double))
            finally:
                double.stop()
            results.append(bench_prometheus(size, workdir))
        results.extend(bench_real_broker(workdir))
    return results


if __name__ == "__main__":
    from bench.common import format_table

    print(format_table([("jmx collector", r) for r in run()]))
