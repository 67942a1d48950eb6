"""`alert_events` rows: queued durably with the state change, then written to the lake.

Why queue first: the event is recorded in the same SQLite transaction as the change that
caused it, then copied to the lake. A crash between the two re-writes the same rows on the
next start; their `event_id` is deterministic, so the view shows each event once.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import logging
import sqlite3
from typing import Any

from alerts.store import Store
from lagwatch.alert_state import EVENTS
from lagwatch.config import Config
from lagwatch.lake import ensure_lake, rows_to_arrow, write_rows

log = logging.getLogger(__name__)


def event_id(*parts: object) -> str:
    return hashlib.sha256("\x1f".join(str(p) for p in parts).encode()).hexdigest()[:32]


def make_event(
    event: str,
    ts: float,
    labels: dict[str, str],
    *,
    incident_key: str = "",
    seq: int | None = None,
    value: float | None = None,
    value_text: str | None = None,
    receiver: str = "",
    detail: str = "",
    identity: tuple[object, ...] = (),
) -> dict[str, Any]:
    """An alert_events row; `identity` (plus event and labels) makes its id deterministic.

    `value_text` is the value in words where the rule's value is one (a status rule: STOP).
    """
    assert event in EVENTS, event
    labels_json = json.dumps(labels, sort_keys=True)
    return {
        "cluster": labels.get("cluster", ""),
        "ts": ts,
        "event": event,
        "alertname": labels.get("alertname", ""),
        "incident_key": incident_key,
        "seq": seq,
        "severity": labels.get("severity", ""),
        "labels": labels_json,
        "value": value,
        "value_text": value_text,
        "receiver": receiver,
        "detail": detail,
        "event_id": event_id(event, labels_json, incident_key, seq, receiver, *identity),
    }


class EventLog:
    def __init__(self, config: Config, store: Store) -> None:
        self._lake = config.resolve_path(config.lake.path)
        self._store = store
        self._engine_id = store.engine_id()

    @staticmethod
    def add(db: sqlite3.Connection, rows: list[dict[str, Any]]) -> None:
        db.executemany(
            "INSERT OR IGNORE INTO pending_events (event_id, row) VALUES (?, ?)",
            [(row["event_id"], json.dumps(row)) for row in rows],
        )

    def flush(self) -> int:
        """Copy queued events to the lake, then forget them. Returns the number written."""
        pending = self._store.query("SELECT event_id, row FROM pending_events")
        if not pending:
            return 0
        rows = [json.loads(raw) for _, raw in pending]
        with self._store.transaction() as db:
            file_no = self._store.next_counter(db, "event_file_seq")
        for row in rows:
            row["ts"] = dt.datetime.fromtimestamp(row["ts"], dt.UTC)
            row["version"] = file_no
        ensure_lake(self._lake)
        write_rows(self._lake, "alert_events", rows_to_arrow("alert_events", rows), f"{self._engine_id}-{file_no:012d}")
        with self._store.transaction() as db:
            db.executemany("DELETE FROM pending_events WHERE event_id = ?", [(eid,) for eid, _ in pending])
        log.debug("wrote %d alert events", len(rows))
        return len(rows)
