"""A real Kafka Streams application in the streams rebalance protocol (KIP-1071), and the
broker side's own reading of its group, for tests.

The Apache Kafka distribution has no Kafka Streams jars; ``kafka-streams-4.3.1-srcbuild.tar.gz``
(beside the Kafka bundles, ``$KAFKA_BUNDLES``, default ``../shared/kafka``) holds kafka-streams,
its examples and ``StreamsGroupCommand``, built from the same source as the 4.3.1 broker. It is
unpacked once into an ignored folder (``$KAFKA_STREAMS_HOME``, default
``.kafka/kafka-streams-4.3.1-srcbuild``; `make test` does it through scripts/kafka-home.sh).
RocksDB comes from PySpark's own ``rocksdbjni`` jar. Nothing here downloads anything.

The application is Kafka's WordCountDemo: it reads ``streams-plaintext-input`` (subtopology 0,
which writes a repartition topic) and counts words (subtopology 1, which reads it), so a group
has two source topics and the broker creates the internal topics itself. StuckTaskApp
(``streams_apps/StuckTaskApp.java``) is a task that gets stuck while its member stays in the group.
"""

from __future__ import annotations

import glob
import os
import shutil
import signal
import subprocess
import tarfile
import tempfile
from pathlib import Path
from typing import Self

from shell.broker import die_with_parent

KAFKA_STREAMS_HOME_ENV = "KAFKA_STREAMS_HOME"
BUNDLE_NAME = "kafka-streams-4.3.1-srcbuild"
#: WordCountDemo's topics: fixed in the demo's source.
INPUT_TOPIC, OUTPUT_TOPIC = "streams-plaintext-input", "streams-wordcount-output"
WORD_COUNT_DEMO = "org.apache.kafka.streams.examples.wordcount.WordCountDemo"
STREAMS_GROUP_COMMAND = "org.apache.kafka.tools.streams.StreamsGroupCommand"
STUCK_TASK_SOURCE = Path(__file__).resolve().parent / "streams_apps" / "StuckTaskApp.java"
#: The record value that blocks StuckTaskApp's task (its STALL constant).
STALL_VALUE = "stall"
STUCK_TASK_THREADS = 2
STUCK_MAX_POLL_INTERVAL_MS = 600_000
_REPO = Path(__file__).resolve().parent.parent


class KafkaStreamsMissing(RuntimeError):
    """Neither an unpacked Kafka Streams build nor its bundle is there."""


def streams_home() -> Path:
    """The unpacked Kafka Streams build (unpacked from its bundle on first use)."""
    home = Path(os.environ.get(KAFKA_STREAMS_HOME_ENV) or _REPO / ".kafka" / BUNDLE_NAME)
    if any(home.glob("libs/kafka-streams-*.jar")):
        return home
    bundle = Path(os.environ.get("KAFKA_BUNDLES") or _REPO.parent / "shared" / "kafka") / f"{BUNDLE_NAME}.tar.gz"
    if not bundle.is_file():
        raise KafkaStreamsMissing(
            f"no Kafka Streams jars in {home} and no bundle at {bundle}: set {KAFKA_STREAMS_HOME_ENV} to a folder "
            "whose libs/ holds kafka-streams, kafka-streams-examples and kafka-tools-streams jars"
        )
    home.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".unpacking-", dir=home.parent))
    try:
        with tarfile.open(bundle) as archive:
            archive.extractall(staging, filter="data")
        try:
            (staging / BUNDLE_NAME).rename(home)  # atomic: a parallel unpack loses the race harmlessly
        except OSError:
            if not any(home.glob("libs/kafka-streams-*.jar")):
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return home


def rocksdb_jar() -> Path:
    """PySpark's rocksdbjni jar (Kafka Streams' state stores need RocksDB; the bundle has none)."""
    import pyspark

    jars = sorted(glob.glob(os.path.join(os.path.dirname(pyspark.__file__), "jars", "rocksdbjni-*.jar")))
    if not jars:
        raise KafkaStreamsMissing("no rocksdbjni jar in pyspark/jars: reinstall pyspark (the project's venv has it)")
    return Path(jars[-1])


def classpath(kafka_home: Path) -> str:
    """The broker distribution's jars, the Kafka Streams build's and RocksDB."""
    jars = [sorted(glob.glob(str(home / "libs" / "*.jar"))) for home in (kafka_home, streams_home())]
    return ":".join([*jars[0], *jars[1], str(rocksdb_jar())])


class StreamsApp:
    """A Kafka Streams application in one JVM, in the streams group protocol: start it, stop it
    (SIGTERM runs its shutdown hook, which closes the application and so leaves the group;
    SIGKILL when that does not end it in time, so no JVM outlives its test). Subclasses name the
    main class (or single-file source) and its arguments."""

    #: Its name in failure messages.
    label = "Kafka Streams application"

    def __init__(
        self, kafka_home: Path, bootstrap: str, application_id: str, work_dir: Path, extra_properties: str = ""
    ) -> None:
        self.application_id = application_id
        self._kafka_home = kafka_home
        work_dir.mkdir(parents=True, exist_ok=True)
        self.properties = work_dir / f"{application_id}.properties"
        self.properties.write_text(
            f"bootstrap.servers={bootstrap}\n"
            f"application.id={application_id}\n"
            "group.protocol=streams\n"
            f"state.dir={work_dir / 'state'}\n"
            "commit.interval.ms=500\n" + extra_properties
        )
        self.log_file = work_dir / f"{application_id}.log"
        self._process: subprocess.Popen[bytes] | None = None

    def main(self) -> list[str]:
        """The main class (or source file) and its arguments."""
        raise NotImplementedError

    def start(self) -> Self:
        command = [
            "java", "-Xmx256m", "-XX:+UseSerialGC", "-cp", classpath(self._kafka_home),
            f"-Dlog4j2.configurationFile={self._kafka_home / 'config' / 'tools-log4j2.yaml'}",
            *self.main(),
        ]  # fmt: skip
        with self.log_file.open("wb") as output:
            self._process = subprocess.Popen(
                command, stdout=output, stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=die_with_parent
            )
        return self

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def stop(self, timeout_s: float = 30.0) -> None:
        """SIGTERM (a clean close that leaves the group), SIGKILL if it does not exit in time."""
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()


class WordCountApp(StreamsApp):
    """WordCountDemo (its topics are fixed: INPUT_TOPIC, OUTPUT_TOPIC)."""

    label = "WordCountDemo"

    def main(self) -> list[str]:
        return [WORD_COUNT_DEMO, str(self.properties)]


class StuckTaskApp(StreamsApp):
    """streams_apps/StuckTaskApp.java: reads ``input_topic``; the task that reads a record whose
    value is STALL_VALUE blocks its stream thread for good while its member stays in the group.
    Two stream threads (two members of one process), so the other partition's task keeps going;
    max.poll.interval.ms keeps the stuck member in the group for a test's length. Run by Java's
    single-file source launcher: no build step, only a JDK."""

    label = "StuckTaskApp"

    def __init__(self, kafka_home: Path, bootstrap: str, application_id: str, work_dir: Path, input_topic: str) -> None:
        threads = f"num.stream.threads={STUCK_TASK_THREADS}\nmax.poll.interval.ms={STUCK_MAX_POLL_INTERVAL_MS}\n"
        super().__init__(kafka_home, bootstrap, application_id, work_dir, threads)
        self.input_topic = input_topic

    def main(self) -> list[str]:
        return [str(STUCK_TASK_SOURCE), str(self.properties), self.input_topic]


def streams_group_command(kafka_home: Path, bootstrap: str, *args: str) -> str:
    """StreamsGroupCommand's output (the broker side's view of a streams group), e.g.
    ``--describe --members --group <id>``."""
    command = [
        "java", "-Xmx256m", "-cp", classpath(kafka_home),
        f"-Dlog4j2.configurationFile={kafka_home / 'config' / 'tools-log4j2.yaml'}",
        STREAMS_GROUP_COMMAND, "--bootstrap-server", bootstrap, *args,
    ]  # fmt: skip
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=True).stdout
