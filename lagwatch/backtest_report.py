"""The backtest report: what `lagwatch alerts backtest --format json` prints, as a contract.

Why in lagwatch/: the dashboard runs the backtest as a child process (it may not import the
alert engine) and reads this JSON, so neither part owns its shape. Times are epoch seconds;
a delay or an end that never came is null. Progress goes to stderr as lines that
`progress_of` reads, so a caller can show a bar and cancel by ending the process.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from typing import Any

VERSION = 2

_PROGRESS = re.compile(r"backtest progress (\d+)/(\d+) steps")


def progress_line(done: int, total: int) -> str:
    return f"backtest progress {done}/{total} steps"


def progress_of(line: str) -> float | None:
    """The fraction done that a stderr line reports, or None for any other line."""
    found = _PROGRESS.search(line)
    if not found:
        return None
    done, total = int(found.group(1)), int(found.group(2))
    return done / total if total else 1.0


@dataclass
class AlertRecord:
    """One alert instance the rule would have raised; `suppressed` names a silence or inhibition."""

    rule: str
    labels: dict[str, str]
    starts_at: float
    ends_at: float | None
    suppressed: str = ""


@dataclass
class NotificationRecord:
    """One notification a receiver would have got, and the alerts it carried."""

    receiver: str
    kind: str
    sent_at: float
    incident_key: str
    seq: int
    rules: list[str]
    firing: int
    resolved: int


@dataclass
class RuleReport:
    name: str
    kind: str
    #: What the rule reads: table, time_column, column, metric (metrics tables), by, reduce.
    reads: dict[str, Any]
    alerts: list[AlertRecord] = field(default_factory=list)
    notifications: list[NotificationRecord] = field(default_factory=list)
    #: alerts, notifications, firing_s, and notifications per receiver (by_receiver).
    totals: dict[str, Any] = field(default_factory=dict)


@dataclass
class StatusChange:
    """A group going to a worse status (STALL or above) and, per rule, seconds until it notified."""

    cluster: str
    group_id: str
    status: str
    previous: str
    at: float
    delays: dict[str, float | None] = field(default_factory=dict)


@dataclass
class Report:
    #: The clusters whose rows were replayed: every configured one, or the one `--cluster` named.
    clusters: list[str]
    since: float
    until: float
    evaluate_every_s: float
    steps: int
    silences_applied: bool
    #: True when no receiver is configured and one stand-in receiver planned the notifications.
    stand_in_receiver: bool
    rules: list[RuleReport]
    status_changes: list[StatusChange]
    elapsed_s: float
    version: int = VERSION


@dataclass
class Comparison:
    """Two versions of the rules over the same range, and the alerts only one of them raises."""

    a: Report
    b: Report
    only_a: list[AlertRecord]
    only_b: list[AlertRecord]


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)} = {_toml_value(v)}" for k, v in value.items()) + "}"
    return json.dumps(str(value))  # a JSON string is a valid TOML basic string


def rule_toml(rule: dict[str, Any]) -> str:
    """One rule (as `--list-rules --format json` gives it) as a `[[alerts.rules]]` block for config.toml."""
    lines = ["[[alerts.rules]]", *(f"{key} = {_toml_value(value)}" for key, value in rule.items())]
    return "\n".join(lines) + "\n"


def to_json(document: Report | Comparison) -> str:
    kind = "comparison" if isinstance(document, Comparison) else "report"
    return json.dumps({"kind": kind, **asdict(document)}, sort_keys=True)


def _report(raw: dict[str, Any]) -> Report:
    rules = [
        RuleReport(
            name=r["name"],
            kind=r["kind"],
            reads=r["reads"],
            alerts=[AlertRecord(**a) for a in r["alerts"]],
            notifications=[NotificationRecord(**n) for n in r["notifications"]],
            totals=r["totals"],
        )
        for r in raw["rules"]
    ]
    changes = [StatusChange(**c) for c in raw["status_changes"]]
    scalars = {k: v for k, v in raw.items() if k not in ("rules", "status_changes", "kind")}
    return Report(rules=rules, status_changes=changes, **scalars)


def from_json(text: str) -> Report | Comparison:
    raw = json.loads(text)
    if raw.get("kind") == "comparison":
        return Comparison(
            a=_report(raw["a"]),
            b=_report(raw["b"]),
            only_a=[AlertRecord(**a) for a in raw["only_a"]],
            only_b=[AlertRecord(**a) for a in raw["only_b"]],
        )
    return _report(raw)
