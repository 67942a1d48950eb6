"""`[spark] source = "kafka"` (Spark's own Kafka source, from the connector jars) against the
bundled Python source, on the real broker: the same samples make the same lake, and the native
source resumes exactly from its checkpoint.

Both sources run `lagwatch stream --available-now` twice over one topic: once after the first
half of the samples (and two malformed records) was published, once after the second half. The
batches therefore end at the same offsets in both, so every table, group_status included
(a row per group for each batch's newest minute), must match row for row through the lake's
newest-wins views. A third native run with nothing new must read nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from harness.config_file import write_config
from harness.processes import start_lagwatch
from harness.real_kafka import RealKafkaBroker
from harness.spark_kafka import spark_kafka_jars
from lagwatch.kafka import ensure_topic
from tests.conftest import ARTIFACTS
from tests.spark_jobs.samples_io import produce_values
from tests.spark_jobs.test_cluster import (
    BROKERS,
    CYCLES,
    ROUNDS,
    TOPIC_PARTITIONS,
    WATERMARK_S,
    assert_meaningful,
    cycle_samples,
    lake_query,
    produce,
    run_available_now,
    table_rows,
)

TABLES = ("metrics_10s", "metrics_1m", "lag_1m", "group_status", "dead_letters")
MALFORMED = [b"{not json", b'{"v":1,"metric":"x"}']
#: The transport's SASL password, read by the job from its environment (never from the file).
PASSWORD_ENV = "LAGWATCH_TRANSPORT_SASL_PASSWORD"


def native_config(
    directory: Path, servers: str, topic: str, source: str, connector: bool = True, **transport: Any
) -> Path:
    """The job's config for `source`; the native one gets the connector through `[spark] jars`.
    `transport` adds `[transport]` keys (its own servers and client settings)."""
    directory.mkdir(parents=True, exist_ok=True)
    spark: dict[str, Any] = {
        "source": source,
        "checkpoint_dir": str(directory / "state" / "checkpoints"),
        "watermark_s": WATERMARK_S,
    }
    if source == "kafka" and connector:
        spark["jars"] = [str(spark_kafka_jars())]
    sections = {
        "cluster": {"name": "cluster-test", "bootstrap_servers": servers},
        "transport": {"samples_topic": topic, "samples_partitions": TOPIC_PARTITIONS, **transport},
        "lake": {"path": str(directory / "lake"), "duckdb_path": str(directory / "lagwatch.duckdb")},
        "spark": spark,
    }
    return write_config(directory / "config.toml", sections, rules=[], receivers=[])


def records_read(config_path: Path) -> list[int]:
    """Records each batch read (pipeline_progress, one row per batch id), in batch order."""
    rows = lake_query(config_path, "select batch_id, input_rows from pipeline_progress where query = 'rollups'")
    return [rows for _, rows in sorted(rows)]


@dataclass
class SourceRuns:
    python: Path
    native: Path
    #: Records published before each run: the first half, then the whole topic.
    published: list[int]
    #: Records the native source's batches read after each of its three runs.
    native_reads: list[list[int]]


@pytest.fixture(scope="module")
def source_runs(broker: Any, tmp_path_factory: pytest.TempPathFactory) -> SourceRuns:
    tmp = tmp_path_factory.mktemp("sources")
    ARTIFACTS.mkdir(exist_ok=True)
    servers, topic = broker.bootstrap_servers, f"sources-{tmp.name}"
    ensure_topic({"bootstrap.servers": servers}, topic, TOPIC_PARTITIONS)
    configs = {source: native_config(tmp / source, servers, topic, source) for source in ("python", "kafka")}
    rounds = [[s for cycle in range(6 * r, 6 * r + 6) for s in cycle_samples(cycle)] for r in range(ROUNDS)]
    published, before_run, native_reads = 0, [], []
    half = ROUNDS // 2
    for part, chunk in enumerate((rounds[:half], rounds[half:])):
        for samples in chunk:
            published += produce(servers, topic, samples)
        if part == 0:
            published += produce_values(servers, topic, [(b"bad", raw) for raw in MALFORMED], partition=1)
        before_run.append(published)
        for source, config in configs.items():
            run_available_now(config, ARTIFACTS / f"{topic}-{source}.log")
        native_reads.append(records_read(configs["kafka"]))
    run_available_now(configs["kafka"], ARTIFACTS / f"{topic}-kafka.log")
    native_reads.append(records_read(configs["kafka"]))
    return SourceRuns(configs["python"], configs["kafka"], before_run, native_reads)


@pytest.mark.slow
def test_the_native_source_makes_the_same_lake_as_the_python_source(source_runs: SourceRuns) -> None:
    assert_meaningful(source_runs.python, CYCLES * BROKERS)
    for table in TABLES:
        rows = table_rows(source_runs.native, table)
        assert rows, f"{table} is empty"
        assert rows == table_rows(source_runs.python, table), table
    assert len(table_rows(source_runs.native, "dead_letters")) == len(MALFORMED)


@pytest.mark.slow
def test_the_native_source_resumes_from_its_checkpoint_reading_every_record_once(source_runs: SourceRuns) -> None:
    first, second, third = source_runs.native_reads
    assert sum(first) == source_runs.published[0], "the first run read what was there"
    assert sum(second) == source_runs.published[1], "the second run read only what was new: nothing twice"
    assert len(second) > len(first), "the second run added a batch of its own"
    assert third == second, "a run with nothing new reads nothing"
    assert records_read(source_runs.python) == second, "the Python source read the same batches"


@pytest.mark.slow
def test_without_the_connector_the_job_exits_2_saying_what_to_set(broker: Any, tmp_path: Path) -> None:
    config = native_config(tmp_path, broker.bootstrap_servers, f"no-jar-{tmp_path.name}", "kafka", connector=False)
    log = tmp_path / "stream.log"
    job = start_lagwatch(config, log, "stream", "--available-now")
    assert job.wait(300) == 2, log.read_text()[-3000:]
    output = log.read_text()
    assert "spark-sql-kafka-0-10" in output
    assert "[spark] packages" in output and "[spark] jars" in output
    assert "org.apache.spark:spark-sql-kafka-0-10_2.13:4." in output
    assert "Traceback" not in output and "at org.apache" not in output, "a message, not a stack trace"


@pytest.mark.slow
def test_the_native_source_reads_over_sasl_with_the_password_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A broker whose only listener the job is given wants SASL/PLAIN: the Java client can read
    only if the librdkafka user name and the environment's password became its sasl.jaas.config
    (quotes and backslashes in it: test_kafka_options.py, against the Java client's own parser)."""
    password = "s3cret-for-the-job"
    with RealKafkaBroker(work_dir=tmp_path / "kafka", sasl_users={"lagwatch": password}) as secured:
        topic = f"sasl-{tmp_path.name}"
        ensure_topic({"bootstrap.servers": secured.bootstrap_servers}, topic, TOPIC_PARTITIONS)
        samples = [s for cycle in range(6) for s in cycle_samples(cycle)]
        produce(secured.bootstrap_servers, topic, samples)
        sasl = {"security.protocol": "sasl_plaintext", "sasl.mechanism": "PLAIN", "sasl.username": "lagwatch"}
        transport = {"bootstrap_servers": secured.sasl_bootstrap_servers, "client": sasl}
        config = native_config(tmp_path / "job", secured.bootstrap_servers, topic, "kafka", **transport)
        log = ARTIFACTS / f"{topic}.log"
        monkeypatch.setenv(PASSWORD_ENV, password)  # the job's environment, inherited by its process
        run_available_now(config, log)
    assert sum(records_read(config)) == len(samples), f"see {log}"
    assert_meaningful(config, 6 * BROKERS)
