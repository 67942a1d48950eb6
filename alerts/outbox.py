"""The persisted outbox: every notification is stored before it is sent, and sent until it lands.

Guarantees, and why:
- Nothing is lost: a message is enqueued in the same SQLite transaction as the state change
  that caused it, and it leaves the `pending` state only when the receiver answered 2xx (or
  when it is given up after `give_up_after_s`, or on a permanent 4xx, recorded as `failed`).
- Order per incident: only the lowest pending sequence of an incident is ever in flight, so
  "resolved" can never overtake its "firing". Different incidents are sent in parallel.
- Duplicates are recognisable: a crash between the send and the mark-delivered re-sends the
  very same bytes with the same incident key and sequence headers, so a receiver can drop it.
- Retries back off exponentially with jitter (retry_initial_s doubling to retry_max_s, each
  delay drawn from [½, 1] of that) so a receiver coming back is not hit by a thundering herd.
"""

from __future__ import annotations

import json
import logging
import random
import sqlite3
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from alerts.events import EventLog, make_event
from alerts.receivers import DeliveryError, send
from alerts.store import Store
from lagwatch.config import AlertReceiver, Config

log = logging.getLogger(__name__)

#: Delivered and given-up messages stay this long in the outbox (the record is in alert_events).
KEEP_FINISHED_S = 7 * 86_400

_COLUMNS = "id, incident_key, seq, receiver, kind, labels, body, created_at, attempts"


@dataclass(frozen=True)
class Message:
    id: int
    incident_key: str
    seq: int
    receiver: str
    kind: str
    labels: dict[str, str]
    body: bytes
    created_at: float
    attempts: int


@dataclass
class DeliveryStats:
    delivered: int = 0
    failed_attempts: int = 0
    given_up: int = 0
    errors: list[str] = field(default_factory=list)


def enqueue(
    db: sqlite3.Connection,
    *,
    incident_key: str,
    seq: int,
    receiver: str,
    kind: str,
    labels: dict[str, str],
    body: bytes,
    now: float,
) -> None:
    """Store a message (inside the caller's transaction); a repeated (key, seq) is ignored."""
    db.execute(
        "INSERT OR IGNORE INTO outbox (incident_key, seq, receiver, kind, alertname, labels, body, created_at, "
        "next_attempt_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (incident_key, seq, receiver, kind, labels.get("alertname", ""), json.dumps(labels), body, now, now),
    )


class Outbox:
    def __init__(self, config: Config, store: Store, events: EventLog, sender: str = "", workers: int = 8) -> None:
        self._sender = sender
        self._alerts = config.alerts
        self._store = store
        self._events = events
        self._receivers: dict[str, AlertReceiver] = {r.name: r for r in config.alerts.receivers}
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="alert-delivery")

    def due(self, now: float) -> list[Message]:
        """The head (lowest pending seq) of every incident whose retry time has come."""
        rows = self._store.query(
            f"SELECT {_COLUMNS} FROM outbox o WHERE status = 'pending' AND next_attempt_at <= ? AND seq = "
            "(SELECT min(seq) FROM outbox i WHERE i.incident_key = o.incident_key AND i.status = 'pending') "
            "ORDER BY id",
            (now,),
        )
        return [Message(r[0], r[1], r[2], r[3], r[4], json.loads(r[5]), r[6], r[7], r[8]) for r in rows]

    def pending_count(self) -> int:
        return int(self._store.query("SELECT count(*) FROM outbox WHERE status = 'pending'")[0][0])

    def deliver_due(self, budget_s: float = 10.0) -> DeliveryStats:
        """Send due messages until none is due or the time budget is spent."""
        stats = DeliveryStats()
        deadline = time.monotonic() + budget_s
        while time.monotonic() < deadline:
            batch = self.due(time.time())
            if not batch:
                break
            outcomes = list(self._pool.map(self._attempt, batch))
            self._record(batch, outcomes, stats)
            if all(outcome is not None for outcome in outcomes):
                break  # every head failed: wait for its backoff instead of spinning
        self._events.flush()
        self._purge_finished()
        return stats

    def _purge_finished(self) -> None:
        """Finished messages are kept a week (for inspection), then dropped so the file stays small."""
        cutoff = time.time() - KEEP_FINISHED_S
        with self._store.transaction() as db:
            db.execute("DELETE FROM outbox WHERE status != 'pending' AND created_at < ?", (cutoff,))

    def _attempt(self, message: Message) -> DeliveryError | None:
        receiver = self._receivers.get(message.receiver)
        if receiver is None:
            return DeliveryError(f"receiver {message.receiver!r} is no longer configured", permanent=True)
        try:
            send(receiver, message.body, message.incident_key, message.seq, self._sender)
        except DeliveryError as exc:
            return exc
        return None

    def _record(self, batch: list[Message], outcomes: list[DeliveryError | None], stats: DeliveryStats) -> None:
        now = time.time()
        with self._store.transaction() as db:
            for message, error in zip(batch, outcomes, strict=True):
                attempts = message.attempts + 1
                if error is None:
                    self._mark_delivered(db, message, attempts, now)
                    stats.delivered += 1
                else:
                    gave_up = self._mark_failed(db, message, attempts, error, now)
                    stats.failed_attempts += 1
                    stats.given_up += int(gave_up)
                    stats.errors.append(str(error))

    def _mark_delivered(self, db: sqlite3.Connection, message: Message, attempts: int, now: float) -> None:
        db.execute("UPDATE outbox SET status = 'delivered', attempts = ? WHERE id = ?", (attempts, message.id))
        detail = f"{message.kind} delivered after {attempts} attempt(s)"
        EventLog.add(db, [self._event("delivered", message, now, detail)])

    def _mark_failed(
        self, db: sqlite3.Connection, message: Message, attempts: int, error: DeliveryError, now: float
    ) -> bool:
        expired = now - message.created_at > self._alerts.give_up_after_s
        if error.permanent or expired:
            db.execute(
                "UPDATE outbox SET status = 'failed', attempts = ?, last_error = ? WHERE id = ?",
                (attempts, str(error), message.id),
            )
            log.error("giving up on %s #%d to %s: %s", message.incident_key, message.seq, message.receiver, error)
            EventLog.add(db, [self._event("failed", message, now, f"gave up after {attempts} attempt(s): {error}")])
            return True
        delay = self.backoff_s(attempts)
        db.execute(
            "UPDATE outbox SET attempts = ?, next_attempt_at = ?, last_error = ? WHERE id = ?",
            (attempts, now + delay, str(error), message.id),
        )
        log.warning(
            "delivery %s #%d to %s failed (%s); retry in %.1f s",
            message.incident_key,
            message.seq,
            message.receiver,
            error,
            delay,
        )
        detail = f"attempt {attempts} failed: {error}; retry in {delay:.1f} s"
        EventLog.add(db, [self._event("failed", message, now, detail, attempts)])
        return False

    def backoff_s(self, attempts: int) -> float:
        ceiling = min(self._alerts.retry_max_s, self._alerts.retry_initial_s * 2 ** (attempts - 1))
        return ceiling * random.uniform(0.5, 1.0)

    @staticmethod
    def _event(event: str, message: Message, now: float, detail: str, *identity: object) -> dict[str, object]:
        return make_event(
            event,
            now,
            message.labels,
            incident_key=message.incident_key,
            seq=message.seq,
            receiver=message.receiver,
            detail=detail,
            identity=identity,
        )

    def close(self) -> None:
        self._pool.shutdown(wait=True)
