"""Real consumer-group members for tests: confluent-kafka Consumers that join a group, poll in a
thread (so they take part in rebalances), and commit given offsets for what they are assigned.

`protocol="consumer"` makes a KIP-848 member (Kafka 4): the broker owns its session and heartbeat
settings, so the classic timeouts are left out."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from confluent_kafka import Consumer, TopicPartition

#: A bound on waits for the group to settle (not a timed assertion).
SETTLE_S = 90


class GroupMember:
    """One consumer in `group_id` subscribed to `topic`, polling until closed."""

    def __init__(
        self,
        bootstrap: str,
        group_id: str,
        topic: str,
        client_id: str,
        commit_offset: int | None,
        protocol: str = "classic",
    ) -> None:
        """`commit_offset` None: a member that never commits."""
        self.client_id = client_id
        self._topic = topic
        self._commit_offset = commit_offset
        settings: dict[str, object] = {
            "bootstrap.servers": bootstrap,
            "group.id": group_id,
            "client.id": client_id,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "group.protocol": protocol,
        }
        if protocol == "classic":
            settings.update({"session.timeout.ms": 6000, "heartbeat.interval.ms": 500})
        self._consumer = Consumer(settings)
        self._consumer.subscribe([topic])
        self._lock = threading.Lock()
        self._assigned: set[int] = set()
        self._committed: set[int] = set()
        self._member_id = ""
        self._running = True
        self._thread = threading.Thread(target=self._poll, name=f"member-{client_id}", daemon=True)
        self._thread.start()

    def _poll(self) -> None:
        while self._running:
            self._consumer.poll(0.2)  # serves the group protocol (join, rebalance); the records are not needed
            assigned = {tp.partition for tp in self._consumer.assignment()}
            fresh = assigned - self._committed
            if fresh and self._commit_offset is not None:
                offsets = [TopicPartition(self._topic, p, self._commit_offset) for p in sorted(fresh)]
                self._consumer.commit(offsets=offsets, asynchronous=False)
            with self._lock:
                self._assigned, self._committed = assigned, self._committed | fresh
                self._member_id = self._consumer.memberid() or ""

    @property
    def assigned(self) -> set[int]:
        with self._lock:
            return set(self._assigned)

    @property
    def committed(self) -> set[int]:
        with self._lock:
            return set(self._committed)

    @property
    def member_id(self) -> str:
        with self._lock:
            return self._member_id

    def close(self) -> None:
        """Leave the group (LeaveGroup is sent: the coordinator rebalances at once)."""
        if self._running:
            self._running = False
            self._thread.join()
            self._consumer.close()


def wait_for(condition: Callable[[], bool], what: str, timeout_s: float = SETTLE_S) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.2)
