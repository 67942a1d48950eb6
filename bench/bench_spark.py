"""Spark job benchmarks: sustained samples/s, p95 freshness at a 2 s trigger, peak RSS.

1. Throughput: N samples (LAGWATCH_BENCH_SPARK_SAMPLES, default 8,000,000) are preloaded into a
   tansu topic with producer batching (fast), then one single-record batch per partition so
   every partition's reported end offset is exact again (tansu quirk, docs/architecture.md). The real
   `lagwatch stream --available-now` runs as a subprocess in batches of BATCH_ROWS (the job's
   default cap), enough batches that the JVM's warm-up is a small part of the run. Sustained
   samples/s = the rows of every batch after the first / the span from that batch's start to
   the last one's end, from the job's own pipeline_progress rows (the first batch pays the
   Python workers' start and code generation once per process); the whole-run figure, first
   batch included, is reported beside it.
2. Freshness: the job runs continuously at `trigger_s = 2` on a fresh topic while a producer
   feeds live samples stamped with the current time; freshness per batch is the job's own
   pipeline_progress `freshness_s` (report time − newest event time written), p95 over batches.
3. Peak RSS of the driver JVM, the Python driver and the Python workers, sampled from /proc.
   The job runs with its default JVM sizing (what `lagwatch up` ships); LAGWATCH_BENCH_SPARK_CONF
   adds `[spark.conf]` lines (TOML) to compare another, e.g. '"spark.driver.memory" = "2g"'.
4. The same throughput run on a Spark standalone cluster on loopback (a Master and
   CLUSTER_WORKERS Workers of one core each, from PySpark's own spark-class:
   harness/spark_cluster.py) over the same preloaded topic, with a fresh checkpoint and
   lake: the executors read Kafka, decode and keep the state in JVMs and Python workers of
   their own, and the driver writes the lake. Its CPU adds the Workers' process trees (the
   executors and their Python workers) to the job's.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench.common import Result
from lagwatch.config import SparkConfig
from lagwatch.vocabulary import Source

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = int(os.environ.get("LAGWATCH_BENCH_SPARK_SAMPLES", "8000000"))
PARTITIONS = 6
SERIES = 5_000
SCRAPE_INTERVAL_MS = 15_000
LIVE_RATE = 1_000  # samples/s fed during the freshness run (one record per produce batch on tansu)
LIVE_SECONDS = 60
CLUSTER_WORKERS = 2
EXECUTOR_MEMORY = "1g"
#: Batch cap of the throughput run: the job's default (`spark.max_rows_per_batch`), what a
#: backlog is processed in.
BATCH_ROWS = SparkConfig.model_fields["max_rows_per_batch"].default


def _sample_json(i: int, ts: int, cluster: str) -> bytes:
    """Contract-1 JSON built from a template: make_sample costs ~60 µs, far too slow for millions."""
    entity = i % SERIES
    return (
        f'{{"v":1,"id":"{cluster}-{i:012d}","ts":{ts},"cluster":"{cluster}","source":"{Source.ADMIN}","collector":"bench",'
        f'"metric":"log_end_offset","kind":"counter","value":{float(i)},"broker":null,"topic":"t{entity % 100}",'
        f'"partition":{entity},"group_id":null,"client_id":null}}'
    ).encode()


def preload(servers: str, topic: str, count: int) -> float:
    from confluent_kafka import Producer

    from lagwatch.kafka import ensure_topic

    ensure_topic({"bootstrap.servers": servers}, topic, PARTITIONS)
    producer = Producer(
        {
            "bootstrap.servers": servers,
            "linger.ms": 50,
            "batch.num.messages": 10_000,
            "queue.buffering.max.messages": 2_000_000,
            "compression.type": "lz4",
        }
    )
    step_ms = SCRAPE_INTERVAL_MS  # every series sampled each step, the last step just now
    start_ms = int(time.time() * 1000) - step_ms * (count // SERIES)
    started = time.monotonic()
    for i in range(count):
        ts = start_ms + (i // SERIES) * step_ms
        value = _sample_json(i, ts, "bench")
        while True:
            try:
                producer.produce(topic, value, partition=(i % SERIES) % PARTITIONS)
                break
            except BufferError:
                producer.poll(0.05)
        if i % 20_000 == 0:
            producer.poll(0)
            if i % 200_000 == 0:
                print(f"bench_spark: preloaded {i:,} samples", file=sys.stderr, flush=True)
    producer.flush(120)
    exact = Producer({"bootstrap.servers": servers, "batch.num.messages": 1, "linger.ms": 0})
    for partition in range(PARTITIONS):  # one single-record batch per partition: exact end offsets
        exact.produce(topic, _sample_json(count + partition, start_ms, "bench"), partition=partition)
    exact.flush(30)
    return time.monotonic() - started


def _write_config(
    directory: Path,
    servers: str,
    topic: str,
    trigger_s: float,
    max_rows_per_batch: int = BATCH_ROWS,
    master: str = "local[2]",
    source: str = "python",
) -> Path:
    path = directory / "config.toml"
    connector = f"jars = {json.dumps([str(_connector_jars())])}\n" if source == "kafka" else ""
    on_cluster = (
        ""
        if master.startswith("local")
        else (f'"spark.executor.memory" = "{EXECUTOR_MEMORY}"\n"spark.driver.host" = "127.0.0.1"\n')
    )
    path.write_text(
        f"""
[cluster]
name = "bench"
bootstrap_servers = "{servers}"
[transport]
samples_topic = "{topic}"
samples_partitions = {PARTITIONS}
[lake]
path = "{directory / "lake"}"
duckdb_path = "{directory / "lagwatch.duckdb"}"
[spark]
master = "{master}"
trigger_s = {trigger_s}
max_rows_per_batch = {max_rows_per_batch}
checkpoint_dir = "{directory / "checkpoints"}"
source = "{source}"
{connector}[spark.conf]
{on_cluster}{os.environ.get("LAGWATCH_BENCH_SPARK_CONF", "")}"""
    )
    return path


def _connector_jars() -> Path:
    """Spark's Kafka connector for `source = "kafka"` (`make bench` unpacks it: SPARK_KAFKA_JARS)."""
    from harness.spark_kafka import spark_kafka_jars

    return spark_kafka_jars()


@dataclass
class JobWatch:
    """The job's process tree, sampled every 0.5 s: peak resident memory (MB) per role, and CPU."""

    jvm: float = 0.0
    driver: float = 0.0
    workers: float = 0.0
    total: float = 0.0
    #: Most Python worker processes alive at once (the job's Python children).
    worker_processes: int = 0
    #: CPU seconds last seen per process of the tree (a process's final half second may be missed).
    cpu: dict[int, float] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event)

    def watch(self, root_pid: int) -> threading.Thread:
        thread = threading.Thread(target=self._loop, args=(root_pid,), daemon=True)
        thread.start()
        return thread

    def stop(self) -> None:
        self._stop.set()

    def _loop(self, root_pid: int) -> None:
        while not self._stop.is_set():
            jvm = driver = workers = 0.0
            processes = 0
            for pid, command, rss, cpu in _tree(root_pid):
                self.cpu[pid] = cpu
                if pid == root_pid:
                    driver += rss
                elif "java" in command:
                    jvm += rss
                elif "python" in command:
                    workers += rss
                    processes += 1
            self.jvm, self.driver = max(self.jvm, jvm), max(self.driver, driver)
            self.workers, self.total = max(self.workers, workers), max(self.total, jvm + driver + workers)
            self.worker_processes = max(self.worker_processes, processes)
            time.sleep(0.5)


def _tree(root: int) -> list[tuple[int, str, float, float]]:
    """(pid, command line, RSS MB, CPU seconds) of root and its descendants."""
    children: dict[int, list[int]] = {}
    info: dict[int, tuple[str, float, float]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = _stat_fields(entry)
            ppid, cpu = int(stat[1]), _cpu_of(stat)
            rss_pages = int((entry / "statm").read_text().split()[1])
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry.name))
        info[int(entry.name)] = (command, rss_pages * os.sysconf("SC_PAGE_SIZE") / 2**20, cpu)
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        if pid in info:
            found.append((pid, *info[pid]))
        todo.extend(children.get(pid, []))
    return found


def _stream(config_path: Path, log: Path, available_now: bool) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "shell.cli", "--config", str(config_path), "stream"]
    if available_now:
        command.append("--available-now")
    with open(log, "ab") as out:
        return subprocess.Popen(
            command,
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def _progress(directory: Path) -> list[tuple[str, float, float, int, float | None]]:
    """One row per (query, batch): the job compacts pipeline_progress during a long run, and its
    replaced files stay for the grace period, so a glob over the files sees those batches twice."""
    import duckdb

    con = duckdb.connect()
    try:
        return con.execute(
            "select distinct on (query, batch_id) query, epoch_ms(ts) / 1000.0, "
            "coalesce(batch_duration_ms, 0) / 1000.0, input_rows, freshness_s "
            f"from read_parquet('{directory / 'lake' / 'pipeline_progress'}/date=2*/*.parquet')"
        ).fetchall()
    finally:
        con.close()


@dataclass
class Throughput:
    sustained: float  # samples/s over the batches after the first (the JVM and workers warm)
    whole_run: float  # samples/s from the first batch's start to the last batch's end
    sustained_note: str
    whole_note: str
    job_cpu_s: float  # CPU of the job's process tree over its whole run
    broker_cpu_s: float  # CPU of the broker, which shares the two cores, over the same run
    wall_s: float


def _stat_fields(process: Path) -> list[str]:
    """/proc/<pid>/stat after the command name (which may hold spaces): state, ppid, …"""
    return (process / "stat").read_text().rsplit(")", 1)[1].split()


def _cpu_of(stat: list[str]) -> float:
    """utime + stime in seconds, from :func:`_stat_fields`."""
    return (int(stat[11]) + int(stat[12])) / os.sysconf("SC_CLK_TCK")


def _cpu_seconds(pid: int) -> float:
    return _cpu_of(_stat_fields(Path(f"/proc/{pid}")))


def _rate(batches: list[tuple[str, float, float, int, float | None]]) -> tuple[int, float]:
    """Rows and seconds from the first batch's start to the last one's end (progress ts = trigger start)."""
    rows = sum(b[3] for b in batches)
    return rows, max(b[1] + b[2] for b in batches) - min(b[1] for b in batches)


THROUGHPUT_TOPIC = "bench-throughput"


def throughput(
    servers: str,
    directory: Path,
    broker_pid: int,
    master: str = "local[2]",
    cluster_roots: tuple[int, ...] = (),
    source: str = "python",
) -> tuple[Throughput, JobWatch]:
    """`stream --available-now` over the preloaded topic on `master` with the `source` Kafka source;
    `cluster_roots` are the PIDs of the Workers whose process trees (executors, their Python
    workers) count in the job's CPU."""
    config_path = _write_config(directory, servers, THROUGHPUT_TOPIC, trigger_s=2, master=master, source=source)
    watch = JobWatch()
    workers = [JobWatch() for _ in cluster_roots]
    broker_cpu, started = _cpu_seconds(broker_pid), time.monotonic()
    job = _stream(config_path, directory / "throughput.log", available_now=True)
    watch.watch(job.pid)
    for worker, pid in zip(workers, cluster_roots, strict=True):
        worker.watch(pid)
    code = job.wait(1800)
    for each in (watch, *workers):
        each.stop()
    job_cpu = sum(sum(each.cpu.values()) for each in (watch, *workers))
    usage = (job_cpu, _cpu_seconds(broker_pid) - broker_cpu, time.monotonic() - started)
    if code != 0:
        raise RuntimeError(f"stream --available-now exited {code}; see {directory / 'throughput.log'}")
    batches = sorted((r for r in _progress(directory) if r[0] == "rollups" and r[3] > 0), key=lambda r: r[1])
    if len(batches) < 3:
        raise RuntimeError(f"only {len(batches)} batches: raise LAGWATCH_BENCH_SPARK_SAMPLES")
    warm_rows, warm_s = _rate(batches[1:])
    all_rows, all_s = _rate(batches)
    note = (
        f"{warm_rows:,} samples in {len(batches) - 1} batches of ≤ {BATCH_ROWS:,} over {warm_s:.1f} s after the "
        f"first (warm-up) batch of {batches[0][2]:.1f} s"
    )
    whole_note = f"{all_rows:,} samples over {all_s:.1f} s, first batch included (JVM start excluded)"
    return Throughput(warm_rows / warm_s, all_rows / all_s, note, whole_note, *usage), watch


def cluster_throughput(servers: str, directory: Path, broker_pid: int) -> Throughput:
    """The throughput run on a standalone cluster of CLUSTER_WORKERS one-core Workers."""
    from harness.spark_cluster import SparkStandaloneCluster

    with SparkStandaloneCluster(directory / "cluster", workers=CLUSTER_WORKERS, cores=1) as cluster:
        roots = tuple(worker.process.pid for worker in cluster.workers)
        rate, _ = throughput(servers, directory, broker_pid, master=cluster.url, cluster_roots=roots)
    return rate


def freshness(servers: str, directory: Path) -> tuple[float, str]:
    from confluent_kafka import Producer

    from lagwatch.kafka import ensure_topic

    topic = "bench-live"
    ensure_topic({"bootstrap.servers": servers}, topic, PARTITIONS)
    config_path = _write_config(directory, servers, topic, trigger_s=2)
    job = _stream(config_path, directory / "live.log", available_now=False)
    producer = Producer({"bootstrap.servers": servers, "batch.num.messages": 1, "linger.ms": 0})
    try:
        started = time.monotonic()
        lake_progress = directory / "lake" / "pipeline_progress"
        while not any(lake_progress.glob("date=2*/*rollups*.parquet")):  # job is up and has run a batch
            producer.produce(topic, _sample_json(0, int(time.time() * 1000), "live"), partition=0)
            producer.poll(0)
            time.sleep(0.5)
            if job.poll() is not None or time.monotonic() - started > 300:
                raise RuntimeError(f"live job did not start; see {directory / 'live.log'}")
        warm = time.time()
        sent = 0
        end = time.monotonic() + LIVE_SECONDS
        while time.monotonic() < end:
            tick = time.monotonic()
            now_ms = int(time.time() * 1000)
            for _ in range(LIVE_RATE // 10):
                producer.produce(topic, _sample_json(sent, now_ms, "live"), partition=sent % PARTITIONS)
                sent += 1
            producer.poll(0)
            time.sleep(max(0.0, 0.1 - (time.monotonic() - tick)))
        producer.flush(30)
        time.sleep(6)  # let the last batches land
    finally:
        job.send_signal(signal.SIGTERM)
        try:
            job.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(job.pid, signal.SIGKILL)
            job.wait()
    values = sorted(
        r[4] for r in _progress(directory) if r[0] == "rollups" and r[4] is not None and r[1] >= warm and r[3] > 0
    )
    if not values:
        raise RuntimeError("no freshness figures recorded")
    p95 = values[min(len(values) - 1, round(0.95 * (len(values) - 1)))]
    return (
        p95,
        f"{sent:,} live samples at {LIVE_RATE}/s, {len(values)} batches, median {values[len(values) // 2]:.1f} s",
    )


def run() -> list[Result]:
    from shell.broker import EmbeddedBroker

    with tempfile.TemporaryDirectory(prefix="bench-spark-") as tmp, EmbeddedBroker() as broker:
        base = Path(tmp)
        (base / "throughput").mkdir()
        (base / "live").mkdir()
        assert broker.pid is not None
        preload_s = preload(broker.bootstrap_servers, THROUGHPUT_TOPIC, SAMPLES)
        rate, watch = throughput(broker.bootstrap_servers, base / "throughput", broker.pid)
        (base / "cluster").mkdir()
        on_cluster = cluster_throughput(broker.bootstrap_servers, base / "cluster", broker.pid)
        p95, live_note = freshness(broker.bootstrap_servers, base / "live")
    return [
        Result(
            "sustained samples/s (local[2], --available-now)",
            rate.sustained,
            "samples/s",
            150_000,
            "min",
            f"{rate.sustained_note}; preload {preload_s:.0f} s",
        ),
        Result("samples/s, whole run incl. warm-up batch", rate.whole_run, "samples/s", None, note=rate.whole_note),
        Result(
            "job CPU per sample (whole run)",
            rate.job_cpu_s / SAMPLES * 1e6,
            "µs",
            None,
            note=f"job {rate.job_cpu_s:.0f} s CPU and the broker {rate.broker_cpu_s:.0f} s, on 2 cores over "
            f"{rate.wall_s:.0f} s from the job's start (the broker serves the topic on the same cores)",
        ),
        Result(
            f"sustained samples/s (standalone cluster, {CLUSTER_WORKERS} workers × 1 core, --available-now)",
            on_cluster.sustained,
            "samples/s",
            None,
            note=f"same topic, fresh checkpoint; {on_cluster.sustained_note}; executors {EXECUTOR_MEMORY} each; "
            f"driver, Master, Workers and broker on the same 2 cores; local[2] in the same run: {rate.sustained:,.0f}",
        ),
        Result(
            "cluster samples/s, whole run incl. warm-up batch",
            on_cluster.whole_run,
            "samples/s",
            None,
            note=on_cluster.whole_note,
        ),
        Result(
            "cluster job CPU per sample (whole run)",
            on_cluster.job_cpu_s / SAMPLES * 1e6,
            "µs",
            None,
            note=f"driver and both Workers' process trees {on_cluster.job_cpu_s:.0f} s CPU, the broker "
            f"{on_cluster.broker_cpu_s:.0f} s, over {on_cluster.wall_s:.0f} s from the job's start",
        ),
        Result(
            "samples per CPU-second: cluster vs local[2]",
            SAMPLES / on_cluster.job_cpu_s,
            "samples/CPU-s",
            None,
            note=f"local[2]: {SAMPLES / rate.job_cpu_s:,.0f} (what one core does when the job has it to itself, "
            f"whatever else the host runs); sustained per core: cluster {on_cluster.sustained / CLUSTER_WORKERS:,.0f}, "
            f"local[2] {rate.sustained / 2:,.0f}",
        ),
        Result("p95 freshness at 2 s trigger", p95, "s", 5, "max", live_note),
        Result(
            "peak RSS driver JVM", watch.jvm, "MB", None, note="the job's default JVM sizing (spark_jobs/session.py)"
        ),
        Result("peak RSS Python driver", watch.driver, "MB", None),
        Result("peak RSS Python workers (sum)", watch.workers, "MB", None),
        Result("peak RSS whole job", watch.total, "MB", None),
    ]


if __name__ == "__main__":
    for result in run():
        print(f"{result.name}: {result.figure:,.2f} {result.unit} ({result.verdict}) {result.note}")
