"""The engine's durable state: one SQLite file in `alerts.state_dir` (state, not the lake).

Why one file and one transaction: a notification must be in the outbox if and only if the
alert state says it was sent. Saving the notifier state, the new outbox messages and the
not-yet-written `alert_events` rows in one transaction means a kill -9 at any point leaves
either all of a cycle's effects or none of them.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

_SCHEMA = """
CREATE TABLE IF NOT EXISTS kv (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS outbox (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    incident_key TEXT NOT NULL,
    seq INTEGER NOT NULL,
    receiver TEXT NOT NULL,
    kind TEXT NOT NULL,
    alertname TEXT,
    labels TEXT,
    body BLOB NOT NULL,
    created_at REAL NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_at REAL NOT NULL,
    status TEXT NOT NULL DEFAULT 'pending',
    last_error TEXT,
    UNIQUE (incident_key, seq)
);
CREATE INDEX IF NOT EXISTS outbox_pending ON outbox (status, incident_key, seq);
CREATE TABLE IF NOT EXISTS pending_events (
    event_id TEXT PRIMARY KEY,
    row TEXT NOT NULL
);
"""


class Store:
    """SQLite in WAL mode, used from the engine thread and its delivery workers (serialised)."""

    def __init__(self, state_dir: Path) -> None:
        state_dir.mkdir(parents=True, exist_ok=True)
        self.path = state_dir / "engine.sqlite"
        self._lock = threading.RLock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.executescript(_SCHEMA)

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def query(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            return self._db.execute(sql, params).fetchall()

    def get_json(self, key: str, default: Any) -> Any:
        rows = self.query("SELECT value FROM kv WHERE key = ?", (key,))
        return json.loads(rows[0][0]) if rows else default

    @staticmethod
    def put_json(db: sqlite3.Connection, key: str, value: Any) -> None:
        db.execute("INSERT OR REPLACE INTO kv (key, value) VALUES (?, ?)", (key, json.dumps(value, sort_keys=True)))

    def engine_id(self) -> str:
        """A stable id for this state dir: prefixes lake file names so engines never clash."""
        existing = self.get_json("engine_id", None)
        if existing:
            return str(existing)
        new_id = uuid.uuid4().hex[:12]
        with self.transaction() as db:
            self.put_json(db, "engine_id", new_id)
        return new_id

    def next_counter(self, db: sqlite3.Connection, name: str) -> int:
        rows = db.execute("SELECT value FROM kv WHERE key = ?", (name,)).fetchall()
        value = (json.loads(rows[0][0]) if rows else 0) + 1
        self.put_json(db, name, value)
        return int(value)

    def close(self) -> None:
        with self._lock:
            self._db.close()
