"""Silences: created from the dashboard's Alerts page, persisted as JSON in `alerts.state_dir`.

Why in lagwatch/: the file is a contract between two processes, the dashboard that writes it
and the alert engine that obeys it, so neither part owns its format.

A silence has equality matchers on labels (every matcher must equal the alert's label; a
value starting with "~" is a full-match regular expression), a start, an end and who made
it and why. Expired silences stay in the file for the record. The file is rewritten
atomically under a lock file, because the dashboard and the engine may be separate processes.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import time
import uuid
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from lagwatch.config import Config, ConfigError

FILE_NAME = "silences.json"


@dataclass
class Silence:
    id: str
    matchers: dict[str, str]
    starts_at: float
    ends_at: float
    created_by: str
    comment: str

    def active(self, now: float) -> bool:
        return self.starts_at <= now < self.ends_at

    def matches(self, labels: dict[str, str]) -> bool:
        return all(_matcher_matches(value, labels.get(name, "")) for name, value in self.matchers.items())


def _matcher_matches(expected: str, actual: str) -> bool:
    if expected.startswith("~"):
        return re.fullmatch(expected[1:], actual) is not None
    return expected == actual


def _path(config: Config) -> Path:
    return config.resolve_path(config.alerts.state_dir) / FILE_NAME


@contextlib.contextmanager
def _locked(config: Config) -> Iterator[Path]:
    path = _path(config)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield path
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _read(path: Path) -> list[Silence]:
    if not path.exists():
        return []
    return [Silence(**raw) for raw in json.loads(path.read_text(encoding="utf-8"))]


def _write(path: Path, silences: list[Silence]) -> None:
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    with open(tmp, "w", encoding="utf-8") as out:
        json.dump([asdict(s) for s in silences], out, indent=1)
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, path)


def list_silences(config: Config) -> list[dict[str, Any]]:
    """Every silence, newest first, with `active` computed now (for the Alerts page)."""
    now = time.time()
    with _locked(config) as path:
        silences = _read(path)
    return [{**asdict(s), "active": s.active(now)} for s in sorted(silences, key=lambda s: -s.starts_at)]


def active_silences(config: Config, now: float) -> list[Silence]:
    with _locked(config) as path:
        return [s for s in _read(path) if s.active(now)]


def create_silence(
    config: Config,
    matchers: dict[str, str],
    duration_s: float,
    created_by: str,
    comment: str,
    starts_at: float | None = None,
) -> str:
    """Persist a silence and return its id. Empty matchers would silence everything: refused."""
    if not matchers or not all(name and value for name, value in matchers.items()):
        raise ConfigError("a silence needs at least one matcher with a label name and a value")
    for value in matchers.values():
        if value.startswith("~"):
            try:
                re.compile(value[1:])
            except re.error as exc:
                raise ConfigError(f"silence matcher {value!r}: bad regex: {exc}") from None
    if duration_s <= 0:
        raise ConfigError(f"silence duration must be positive, got {duration_s}")
    start = time.time() if starts_at is None else starts_at
    silence = Silence(uuid.uuid4().hex[:16], dict(matchers), start, start + duration_s, created_by, comment)
    with _locked(config) as path:
        _write(path, [*_read(path), silence])
    return silence.id


def expire_silence(config: Config, silence_id: str) -> bool:
    """End a silence now; False if no such silence (or already over)."""
    now = time.time()
    with _locked(config) as path:
        silences = _read(path)
        found = False
        for silence in silences:
            if silence.id == silence_id and silence.ends_at > now:
                silence.ends_at = now
                found = True
        if found:
            _write(path, silences)
    return found
