"""The two Kafka sources of the Spark job side by side: `[spark] source = "python"` (the bundled
confluent-kafka data source) against `"kafka"` (Spark's own, from the connector jars).

Both run `lagwatch stream --available-now` on `local[2]` over the same preloaded topic on the real
Kafka broker (KAFKA_HOME), each with a fresh checkpoint and lake, one after the other, measured
as bench_spark measures its throughput run: sustained samples/s over the batches after the first,
CPU of the job's whole process tree per sample, and peak RSS of the whole job (driver JVM, Python
driver and every Python worker) with the most Python workers alive at once. The Python source
reads, decodes and routes in its reader's Python workers; the native source reads in the JVM and
decodes in `mapInArrow` workers. The broker's CPU is stated beside each run, as it shares the cores.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from bench.bench_spark import THROUGHPUT_TOPIC, JobWatch, Throughput, preload, throughput
from bench.common import Result
from harness.real_kafka import RealKafkaBroker

SAMPLES = int(os.environ.get("LAGWATCH_BENCH_SPARK_SAMPLES", "8000000"))
#: The order the sources run in (LAGWATCH_BENCH_SOURCES="kafka,python" turns it round, to see
#: what running second, with the topic in the page cache, is worth).
SOURCES = tuple(os.environ.get("LAGWATCH_BENCH_SOURCES", "python,kafka").split(","))


def _results(source: str, rate: Throughput, watch: JobWatch) -> list[Result]:
    label = f'source = "{source}"'
    return [
        Result(f"{label}: sustained samples/s", rate.sustained, "samples/s", None, note=rate.sustained_note),
        Result(f"{label}: samples/s, whole run", rate.whole_run, "samples/s", None, note=rate.whole_note),
        Result(
            f"{label}: job CPU per sample",
            rate.job_cpu_s / SAMPLES * 1e6,
            "µs",
            None,
            note=f"job {rate.job_cpu_s:.0f} s CPU, broker {rate.broker_cpu_s:.0f} s, over {rate.wall_s:.0f} s",
        ),
        Result(
            f"{label}: peak RSS whole job",
            watch.total,
            "MB",
            None,
            note=f"driver JVM {watch.jvm:,.0f} MB, Python driver {watch.driver:,.0f} MB, Python workers "
            f"{watch.workers:,.0f} MB (at most {watch.worker_processes} at once); the job's default JVM sizing",
        ),
    ]


def run() -> list[Result]:
    results: list[Result] = []
    with tempfile.TemporaryDirectory(prefix="bench-sources-") as tmp, RealKafkaBroker(Path(tmp) / "broker") as broker:
        assert broker.pid is not None
        preload_s = preload(broker.bootstrap_servers, THROUGHPUT_TOPIC, SAMPLES)
        for source in SOURCES:
            job_dir = Path(tmp) / f"source-{source}"
            job_dir.mkdir()
            rate, watch = throughput(broker.bootstrap_servers, job_dir, broker.pid, source=source)
            results += _results(source, rate, watch)
    results[0].note += f"; {SAMPLES:,} samples preloaded in {preload_s:.0f} s into Kafka {broker.version_text}"
    return results


if __name__ == "__main__":
    for result in run():
        print(f"{result.name}: {result.figure:,.2f} {result.unit} ({result.verdict}) {result.note}")
