"""`lagwatch stream` on a real Spark standalone cluster (a Master and two one-core Workers from
PySpark's own spark-class, harness/spark_cluster.py) against the real Kafka broker.

What a cluster adds over `local[2]`: executors in JVMs of their own, started by a Worker in a bare
environment, that must be sent the project's packages and told which Python to run; state and
shuffle spread over two executors; and an executor that can die mid-batch. Each test compares
the cluster's lake with a `local[2]` run over the same topic, table by table, through the lake's
own newest-wins views. The only column left out is `version` (the batch id that wrote a row,
which the views already drop): every other column of lag_1m, metrics_1m and group_status is
event-time data and must match exactly.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer

from harness.config_file import write_config as write_toml_config
from harness.polling import wait_until
from harness.processes import ROOT, start_lagwatch
from harness.spark_cluster import SparkStandaloneCluster
from lagwatch import lake as lakelib
from lagwatch.config import load_config, parse_config
from lagwatch.kafka import ensure_topic
from lagwatch.samples import Sample, make_sample
from spark_jobs.job import JobPaths
from spark_jobs.session import project_archive
from tests.conftest import ARTIFACTS

TOPIC_PARTITIONS = 4
GROUPS = 12
GROUP_PARTITIONS = 4
BROKERS = 3
STEP_MS = 15_000
#: Event times start here (inside every retention; the views and the lake are time-partitioned).
START_MS = (int(time.time() * 1000) - 3_600_000) // 60_000 * 60_000
#: Far above the test's whole event-time span (24 cycles, 6 minutes): no sample is ever behind the
#: watermark, whichever records a continuous run's micro-batches happen to hold, so the batch
#: boundaries cannot drop anything and the recomputation must match exactly.
WATERMARK_S = 3600
COMPARED_TABLES = ("lag_1m", "metrics_1m", "group_status")
ROUNDS = 4
CYCLES = ROUNDS * 6


def cycle_samples(cycle: int) -> list[Sample]:
    """One collector cycle at START_MS + cycle × 15 s: lag pairs for every group-partition, broker metrics.

    Three kinds of consumer so lag_1m and group_status carry different statuses: steady (keeps up),
    stopped (committed offset frozen), slow (consumes half of what is produced).
    """
    ts = START_MS + cycle * STEP_MS
    samples: list[Sample] = []
    for group in range(GROUPS):
        topic = f"t{group % 3}"
        for partition in range(GROUP_PARTITIONS):
            end = 10_000 + cycle * 300 * (partition + 1)
            committed = (end - 20, 10_000, 10_000 + cycle * 150 * (partition + 1))[group % 3]
            labels = {"source": "admin", "group_id": f"g{group}", "topic": topic, "partition": partition}
            samples.append(_sample(ts, "committed_offset", committed, **labels))
            samples.append(_sample(ts, "consumer_lag", end - committed, **labels))
    for broker in range(BROKERS):
        samples.append(_sample(ts, "under_replicated_partitions", (cycle + broker) % 3, broker=str(broker)))
        samples.append(
            _sample(ts, "messages_in_total", cycle * 1000.0 * (broker + 1), kind="counter", broker=str(broker))
        )
    return samples


def _sample(ts: int, metric: str, value: float, kind: str = "gauge", source: str = "jmx", **labels: Any) -> Sample:
    return make_sample(
        ts=ts, cluster="cluster-test", source=source, collector="test", metric=metric, kind=kind, value=value, **labels
    )


def produce(servers: str, topic: str, samples: list[Sample]) -> int:
    """Keyed, batched produce (one entity's samples stay in order on one partition), all of it
    sent by the final flush: each partition's share arrives in one request, which the broker
    appends at once, so a micro-batch never ends between a committed_offset sample and the
    consumer_lag sample of the same cycle (a split pair waits in the state for its partner, but the
    test keeps batches whole)."""
    producer = Producer({"bootstrap.servers": servers, "linger.ms": 5000, "acks": "all"})
    for index, sample in enumerate(samples):
        producer.produce(topic, value=sample.to_json(), key=sample.key())
        if index % 1000 == 0:
            producer.poll(0)
    assert producer.flush(30) == 0, "records not delivered"
    return len(samples)


def write_config(directory: Path, servers: str, topic: str, master: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    sections = {
        "cluster": {"name": "cluster-test", "bootstrap_servers": servers},
        "transport": {"samples_topic": topic, "samples_partitions": TOPIC_PARTITIONS},
        "lake": {"path": str(directory / "lake"), "duckdb_path": str(directory / "lagwatch.duckdb")},
        "spark": {
            "master": master,
            "checkpoint_dir": str(directory / "state" / "checkpoints"),
            "watermark_s": WATERMARK_S,
            "trigger_s": 2,
            # Everything on loopback; 1 GB per executor (the Workers offer 1 GB each).
            "conf": {"spark.executor.memory": "1g", "spark.driver.host": "127.0.0.1"},
        },
    }
    return write_toml_config(directory / "config.toml", sections, rules=[], receivers=[])


def lake_query(config_path: Path, sql: str) -> list[tuple[Any, ...]]:
    config = load_config(config_path)
    con = lakelib.connect_readonly(config.resolve_path(config.lake.path), config.resolve_path(config.lake.duckdb_path))
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def table_rows(config_path: Path, table: str) -> list[tuple[Any, ...]]:
    """The table as the views show it (newest version per key; `version` is not in the views)."""
    return lake_query(config_path, f"select * from {table} order by all")


def current_group_status(config_path: Path) -> list[tuple[Any, ...]]:
    """Each group's newest status row (what the dashboard and the alerts read)."""
    return lake_query(
        config_path,
        "select * from group_status qualify row_number() over "
        "(partition by cluster, group_id order by window_start desc) = 1 order by all",
    )


def run_available_now(config_path: Path, log: Path, timeout_s: float = 300) -> None:
    job = start_lagwatch(config_path, log, "stream", "--available-now")
    try:
        assert job.wait(timeout_s) == 0, f"stream --available-now failed; see {log}"
    finally:
        if job.poll() is None:
            os.killpg(job.pid, signal.SIGKILL)
            job.wait()


def assert_meaningful(config_path: Path, samples: int) -> None:
    """The lake being compared holds every sample, and statuses of more than one kind."""
    counted = lake_query(
        config_path, "select sum(samples) from metrics_1m where metric = 'under_replicated_partitions'"
    )
    assert counted == [(samples,)]
    statuses = {row[0] for row in lake_query(config_path, "select distinct status from lag_1m")}
    assert len(statuses) >= 2, f"one status only: {statuses}"


def _config_with_checkpoints(checkpoint_dir: str) -> Any:
    return parse_config({"cluster": {"name": "t"}, "spark": {"checkpoint_dir": checkpoint_dir}}, environ={})


def test_a_checkpoint_uri_is_kept_as_written_and_a_path_is_resolved(tmp_path: Path) -> None:
    """An executor on another host reaches the checkpoint only through the URI the user wrote;
    the project's zip is then built in a local temp folder, since the driver serves it."""
    on_hdfs = JobPaths.of(_config_with_checkpoints("hdfs://namenode:8020/lagwatch/checkpoints/"))
    assert on_hdfs.checkpoint("rollups") == "hdfs://namenode:8020/lagwatch/checkpoints/rollups"
    assert on_hdfs.archives.is_absolute()
    local = JobPaths.of(_config_with_checkpoints(str(tmp_path / "state" / "checkpoints")))
    assert local.checkpoint("rollups") == str(tmp_path / "state" / "checkpoints" / "rollups")
    assert local.archives == tmp_path / "state" / "pyfiles"


def test_the_project_zip_holds_both_packages_and_is_built_once(tmp_path: Path) -> None:
    first = project_archive(tmp_path)
    assert first is not None and project_archive(tmp_path) == first
    assert len(list(tmp_path.iterdir())) == 1, "the same code, the same file"
    with zipfile.ZipFile(first) as archive:
        names = set(archive.namelist())
    assert {
        "lagwatch/__init__.py",
        "lagwatch/config/__init__.py",
        "lagwatch/config/model.py",
        "spark_jobs/kafka_source.py",
        "spark_jobs/rollups.py",
    } <= names
    assert not any(name.startswith(("collectors/", "dashboard/")) for name in names)


@pytest.mark.slow
def test_executors_import_the_project_from_the_zip_the_driver_ships(
    spark_cluster: SparkStandaloneCluster, tmp_path: Path
) -> None:
    """The Workers' environment knows nothing of the project: each executor's Python must find
    spark_jobs and lagwatch in the zip the session shipped, not in an install of its own."""
    script = f"""
import json
from pathlib import Path
from lagwatch.config import parse_config
from spark_jobs.session import build_session

config = parse_config({{"cluster": {{"name": "t"}}, "spark": {{"master": "{spark_cluster.url}"}}}})
spark = build_session(config, archive_dir=Path("{tmp_path / "pyfiles"}"))

def where(_):
    import lagwatch, spark_jobs.kafka_source
    return [(spark_jobs.kafka_source.__file__, lagwatch.__file__)]

print("MODULES " + json.dumps(spark.sparkContext.parallelize(range(4), 4).mapPartitions(where).collect()))
spark.stop()
"""
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=180,
    )
    line = next((line for line in done.stdout.splitlines() if line.startswith("MODULES ")), None)
    assert line is not None, done.stderr[-3000:]
    (archive,) = (tmp_path / "pyfiles").glob("lagwatch-*.zip")
    found = {path for pair in json.loads(line.removeprefix("MODULES ")) for path in pair}
    assert found == {f"./{archive.name}/spark_jobs/kafka_source.py", f"./{archive.name}/lagwatch/__init__.py"}
    fetched = list(spark_cluster.work_dir.glob(f"worker-*/app-*/*/{archive.name}"))
    assert len(fetched) == 2, "each Worker's executor fetched the zip into its own work dir"


@dataclass
class ClusterRuns:
    """The lakes of one topic: a continuous cluster run with a Worker killed, an available-now
    cluster run, a local[2] recomputation; and what the kill hit."""

    continuous: Path
    available_now: Path
    local: Path
    killed_pids: list[int]
    stop_code: int
    #: Tasks each Worker's executor started during the available-now run.
    tasks_per_worker: list[int]


@pytest.fixture(scope="module")
def cluster_runs(
    spark_cluster: SparkStandaloneCluster, broker: Any, tmp_path_factory: pytest.TempPathFactory
) -> ClusterRuns:
    """Three runs over one topic (one Spark driver each: they dominate the module's time).

    1. `lagwatch stream` on the cluster while the samples arrive in four rounds of 90 s of
       event time; while the batch reading the third round has a task on Worker 0, that Worker
       and its executor are SIGKILLed; SIGTERM once every record is counted.
    2. `--available-now` on the cluster (a fresh Worker in the killed one's place).
    3. `--available-now` on `local[2]`: the recomputation.

    Runs 2 and 3 read the topic in one batch each. A cap that splits the topic could end
    batches between the two samples of a lag pair; the first half then waits in the state for
    its partner, but the runs' batch boundaries (and so their group_status rows) would differ.
    """
    tmp = tmp_path_factory.mktemp("cluster-runs")
    servers, topic = broker.bootstrap_servers, f"cluster-{tmp.name}"
    ensure_topic({"bootstrap.servers": servers}, topic, TOPIC_PARTITIONS)
    continuous = write_config(tmp / "continuous", servers, topic, spark_cluster.url)
    log = ARTIFACTS / f"{topic}-continuous.log"
    rounds = [[s for cycle in range(6 * r, 6 * r + 6) for s in cycle_samples(cycle)] for r in range(ROUNDS)]
    job = start_lagwatch(continuous, log, "stream")
    produced, killed = 0, []
    try:
        for index, samples in enumerate(rounds):
            tasks_before = spark_cluster.tasks_started(0)
            produced += produce(servers, topic, samples)
            if index == 2:
                wait_until(lambda n=tasks_before: spark_cluster.tasks_started(0) > n, 120, "a task on Worker 0")
                killed = spark_cluster.kill_worker(0)
            wait_for_records(continuous, produced, job, log)
        job.send_signal(signal.SIGTERM)
        stop_code = job.wait(120)
    finally:
        if job.poll() is None:
            os.killpg(job.pid, signal.SIGKILL)
            job.wait()
        spark_cluster.replace_worker(0)

    available_now = write_config(tmp / "available-now", servers, topic, spark_cluster.url)
    tasks_before = [spark_cluster.tasks_started(index) for index in (0, 1)]
    run_available_now(available_now, ARTIFACTS / f"{topic}-available-now.log")
    tasks = [spark_cluster.tasks_started(index) - tasks_before[index] for index in (0, 1)]
    local = write_config(tmp / "local", servers, topic, "local[2]")
    run_available_now(local, ARTIFACTS / f"{topic}-local.log")
    return ClusterRuns(continuous, available_now, local, killed, stop_code, tasks)


@pytest.mark.slow
def test_available_now_on_the_cluster_equals_local_2(cluster_runs: ClusterRuns) -> None:
    assert_meaningful(cluster_runs.local, CYCLES * BROKERS)
    for table in COMPARED_TABLES:
        assert table_rows(cluster_runs.available_now, table) == table_rows(cluster_runs.local, table), table
    assert all(tasks > 0 for tasks in cluster_runs.tasks_per_worker), "both Workers' executors ran tasks"


@pytest.mark.slow
def test_worker_killed_mid_run_loses_nothing_and_counts_nothing_twice(cluster_runs: ClusterRuns) -> None:
    """The batch the kill hit is retried on the other executor (the lost shuffle output
    recomputed, the state reloaded from the checkpoint), or the query restarts from its
    checkpoint; either way the lake must equal the local[2] recomputation. lag_1m and
    metrics_1m hold one row per window whatever the batches were; group_status holds a row per
    group for each batch's newest minute, which depends on where batches ended, so there the
    comparison is each group's current status."""
    assert len(cluster_runs.killed_pids) >= 2, "the Worker and the executor JVM it started were killed"
    assert cluster_runs.stop_code == 0, "the job kept running after the kill and stopped cleanly on SIGTERM"
    assert_meaningful(cluster_runs.continuous, CYCLES * BROKERS)
    batches = lake_query(cluster_runs.continuous, "select count(*) from pipeline_progress where input_rows > 0")
    assert batches[0][0] >= ROUNDS, "state carried from batch to batch, across the kill"
    for table in ("lag_1m", "metrics_1m"):
        assert table_rows(cluster_runs.continuous, table) == table_rows(cluster_runs.local, table), table
    current = current_group_status(cluster_runs.continuous)
    assert current == current_group_status(cluster_runs.local)
    assert len(current) == GROUPS


def wait_for_records(config_path: Path, records: int, job: subprocess.Popen[bytes], log: Path) -> None:
    """Until the job's committed batches (pipeline_progress, one row per batch id) add up to `records`."""
    deadline = time.monotonic() + 240
    counted = 0
    while time.monotonic() < deadline:
        assert job.poll() is None, f"the job exited with {job.returncode}; see {log}"
        counted = lake_query(config_path, "select coalesce(sum(input_rows), 0) from pipeline_progress")[0][0]
        if counted >= records:
            return
        time.sleep(0.5)
    raise AssertionError(f"the job counted {counted} of {records} records in 240 s; see {log}")
