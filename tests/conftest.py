"""Shared fixtures: every test talks to real parts.

- ``broker``: one real Apache Kafka broker (KRaft, JMX) for the session, from ``KAFKA_HOME``:
  the broker the suite treats as the truth (``broker.version`` says which release, 3.x or 4.x).
- ``tansu``: one embedded tansu broker for the session, started by the product's own launcher,
  for the tests of what `make run` uses.
- ``secure_broker``: one real Kafka broker on SASL_SSL + SCRAM-SHA-512 with the
  StandardAuthorizer and monitoring users holding the documented ACLs
  (``harness/secure_kafka.py``), started only by the tests that use it.
- ``spark``: one local[2] SparkSession for the session (cold start ≈ 8 s, paid once).
- ``make_config``: a validated Config pointing at the broker and a per-test lake and state.
- ``two_clusters``: the session broker ("home") and a second real cluster, for `[[clusters]]`
  (``harness/two_clusters.py``).
- JMX test double, webhook receiver and Alertmanager live in ``harness/`` and are
  registered below as plugins.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.real_kafka import KafkaHomeMissing, RealKafkaBroker, kafka_home, kafka_version
from lagwatch.config import Config, parse_config
from shell.broker import EmbeddedBroker

pytest_plugins = [
    "harness.jmx_double",
    "harness.webhook_receiver",
    "harness.kafka_workload",
    "harness.alertmanager",
    "harness.exporter",
    "harness.spark_cluster",
    "harness.secure_kafka",
    "harness.oidc_provider",
    "harness.two_clusters",
]

ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"


def pytest_sessionstart(session: pytest.Session) -> None:
    """No real broker, no run: one line saying what to set, never a silent skip."""
    try:
        kafka_home()
    except KafkaHomeMissing as exc:
        pytest.exit(str(exc), returncode=pytest.ExitCode.USAGE_ERROR)


def pytest_report_header() -> str:
    """Say which Kafka line the real-broker tests ran on: `make test` runs the suite on two."""
    home = kafka_home()
    return f"kafka: {'.'.join(map(str, kafka_version(home)))} from {home}"


@pytest.fixture(scope="session")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealKafkaBroker]:
    with RealKafkaBroker(work_dir=tmp_path_factory.mktemp("kafka")) as running:
        yield running


@pytest.fixture(scope="session")
def tansu(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedBroker]:
    log_path = tmp_path_factory.mktemp("tansu") / "tansu.log"
    with EmbeddedBroker(log_path=log_path) as running:
        yield running


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """One local[2] session with the job's own settings (session_settings: UI off, 2 shuffle
    partitions, UTC, the JVM options), plus 2 GB for the driver."""
    from pyspark.sql import SparkSession

    from spark_jobs.session import session_settings

    os.environ.setdefault("PYSPARK_PYTHON", os.sys.executable)  # type: ignore[attr-defined]
    settings = {**session_settings(parse_config({"cluster": {"name": "test"}})), "spark.driver.memory": "2g"}
    builder = SparkSession.builder.master("local[2]").appName("lagwatch-tests")
    for key, value in settings.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture
def unique() -> Callable[[str], str]:
    """Unique names per test (topics, groups) so tests sharing the broker never collide."""
    return lambda prefix: f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def make_config(broker: RealKafkaBroker, tmp_path: Path, unique: Callable[[str], str]) -> Callable[..., Config]:
    """Build a validated Config on the real test broker; sections given as dicts override defaults."""

    def build(**sections: dict[str, Any]) -> Config:
        data: dict[str, Any] = {
            "cluster": {"name": "test"},
            "transport": {"samples_topic": unique("samples")},
            "lake": {"path": str(tmp_path / "lake"), "duckdb_path": str(tmp_path / "lagwatch.duckdb")},
            "spark": {"checkpoint_dir": str(tmp_path / "checkpoints")},
            "alerts": {"state_dir": str(tmp_path / "alerts"), "use_default_rules": False},
        }
        for name, values in sections.items():
            data[name] = {**data.get(name, {}), **values}
        data["cluster"].setdefault("bootstrap_servers", broker.bootstrap_servers)
        return parse_config(data, environ={})

    return build


@pytest.fixture
def artifacts_dir() -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS
