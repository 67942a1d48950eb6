"""A running WordCountDemo (harness/kafka_streams.py) for the streams-group tests, and the broker
side's own view of its group (StreamsGroupCommand) parsed into what Lagwatch's reader gives."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

from collectors.streams_groups.reader import StreamsGroupsRead, read_streams_groups
from collectors.streams_groups.requests import StreamsGroupDescription, Tasks
from harness.kafka_streams import INPUT_TOPIC, StreamsApp, WordCountApp, streams_group_command

#: WordCountDemo's input is read by subtopology 0 and its repartition topic by subtopology 1:
#: two partitions each make four tasks.
INPUT_PARTITIONS = 2
RUNNING_TIMEOUT_S = 90.0
_TASKS = re.compile(r"([A-Z-]+): ((?:\S+:\[[0-9,]*\]; )*)")


def repartition_topic(application_id: str) -> str:
    return f"{application_id}-KSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition"


def read_group(broker: Any, group: str) -> StreamsGroupsRead:
    return read_streams_groups([("127.0.0.1", broker.port)], lambda g: g == group, time.monotonic() + 10)


def describe(broker: Any, group: str) -> StreamsGroupDescription | None:
    read = read_group(broker, group)
    assert read.errors == [], read.errors
    return read.descriptions.get(group)


def wait_running(
    broker: Any, app: StreamsApp, source_partitions: int = 2 * INPUT_PARTITIONS, members: int = 1
) -> StreamsGroupDescription:
    """The group once Stable with its `members` and every task active, reading `source_partitions`
    (WordCountDemo's by default; the app's log when it does not get there). A fresh broker answers
    COORDINATOR_LOAD_IN_PROGRESS while it loads its group partitions."""
    deadline, read = time.monotonic() + RUNNING_TIMEOUT_S, None
    while time.monotonic() < deadline:
        assert app.running, f"{app.label} exited: {app.log_file.read_text()[-3000:]}"
        read = read_group(broker, app.application_id)
        description = read.descriptions.get(app.application_id)
        if description is not None and description.state == "Stable" and len(description.members) == members:
            active = [tp for m in description.members for tp in description.task_partitions(m.active)]
            if len(active) == source_partitions:
                return description
        time.sleep(0.5)
    raise TimeoutError(f"{app.application_id} not Stable within {RUNNING_TIMEOUT_S:.0f} s: {read}, {app.log_file}")


def start_word_count(broker: Any, application_id: str, work_dir: Path) -> tuple[WordCountApp, StreamsGroupDescription]:
    app = WordCountApp(broker.home, broker.bootstrap_servers, application_id, work_dir).start()
    try:
        return app, wait_running(broker, app)
    except BaseException:
        app.stop()
        raise


def tasks_text(tasks: Tasks) -> dict[str, tuple[int, ...]]:
    return dict(tasks.by_subtopology)


def command_members(broker: Any, group: str) -> dict[str, tuple[str, str, dict[str, dict[str, tuple[int, ...]]]]]:
    """StreamsGroupCommand --describe --members: member id → (process id, client id, kind → tasks),
    kind ACTIVE, STANDBY or WARMUP (a kind without tasks is not printed)."""
    out = streams_group_command(broker.home, broker.bootstrap_servers, "--describe", "--members", "--group", group)
    members = {}
    for line in out.splitlines():
        fields = line.split(maxsplit=4)
        if len(fields) == 5 and fields[0] == group:
            kinds = {
                kind: {s: tuple(int(p) for p in ps.split(",") if p) for s, ps in re.findall(r"(\S+):\[([0-9,]*)\];", t)}
                for kind, t in _TASKS.findall(fields[4] + " ")
            }
            members[fields[1]] = (fields[2], fields[3], kinds)
    return members


def command_lag(broker: Any, group: str) -> dict[tuple[str, int], int]:
    """StreamsGroupCommand --describe --offsets: (topic, partition) → lag."""
    out = streams_group_command(broker.home, broker.bootstrap_servers, "--describe", "--offsets", "--group", group)
    rows = {}
    for line in out.splitlines():
        fields = line.split()
        if len(fields) == 4 and fields[0] == group:
            rows[(fields[1], int(fields[2]))] = int(fields[3])
    return rows


__all__ = ["INPUT_TOPIC", "command_lag", "command_members", "describe", "start_word_count", "wait_running"]
