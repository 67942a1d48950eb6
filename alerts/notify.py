"""Alertmanager's notification semantics, as a state machine driven by an injectable clock.

Per alert instance (rule + label set):  inactive → pending (condition true) → firing (true for
`for`) → resolved (condition false). A pending alert whose condition clears is dropped.

Per group ((receiver, values of `alerts.group_by`), like an Alertmanager route):
- a new group waits `group_wait` before its first notification, so alerts that start together
  arrive together;
- afterwards it is looked at every `group_interval`: if an alert joined or resolved since the
  last notification, it sends (kind "firing" or, when nothing fires any more, "resolved");
- if nothing changed but alerts still fire, it re-sends after `repeat_interval` (kind "repeat");
- after its resolved notification the group closes; the next alert opens a new incident.
An incident is one such group episode: its key is stable for its lifetime and each
notification gets the next sequence number.

Silences and inhibition suppress firing alerts from notifications (the alert stays firing in
the state and in `alert_events`). A resolved notification is still sent for an alert that was
notified as firing before it was suppressed, so a receiver's open incident always closes.
Inhibition is Alertmanager's: an active (pending or firing) source alert matching
`source_match` mutes target alerts matching `target_match` with equal `equal` labels. Pending
sources count so that lag pages stay quiet during the broker-down rule's own `for` time.
Default: category=broker_down (rule on `up` by broker) mutes category=lag in the same cluster:
we know a broker is down from its `up` sample, and while one is down, lag is expected on the
partitions it led, and the broker page is the one that matters.

A receiver type may change the group timing (`ReceiverType.timing`): with `alertmanager`
receivers, Alertmanager does the grouping itself, so such groups send at once and re-send every
`resend_s` so Alertmanager keeps the alerts alive.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass
from typing import Any

from alerts.evaluate import Condition, fingerprint  # noqa: F401 (fingerprint: part of this module's API)
from alerts.events import make_event
from alerts.receivers import AlertView, Notification, Timing, receiver_type
from alerts.rules import CompiledRule
from lagwatch.config import PREVIOUS_ALERTNAME_LABEL, AlertReceiver, AlertsConfig, InhibitRule, parse_duration
from lagwatch.silences import Silence

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Outgoing:
    """A notification to enqueue, with its incident key and sequence number."""

    notification: Notification
    incident_key: str
    seq: int


def _matches(matchers: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in matchers.items())


def as_before_rename(labels: dict[str, str]) -> dict[str, str] | None:
    """A renamed rule's alert under its old alertname (None for any other alert).

    Why: silences and inhibit rules written for the old name keep matching for one release.
    """
    old = labels.get(PREVIOUS_ALERTNAME_LABEL)
    return {**labels, "alertname": old} if old else None


def _matches_any_name(matchers: dict[str, str], labels: dict[str, str]) -> bool:
    before = as_before_rename(labels)
    return _matches(matchers, labels) or (before is not None and _matches(matchers, before))


def _value_of(alert: dict[str, Any]) -> dict[str, Any]:
    """An alert's value for its alert_events rows: the number, and the word where it is one."""
    return {"value": alert.get("value"), "value_text": alert.get("value_text")}


_warned_silences: set[str] = set()


def _old_name_silence(silence: Silence, labels: dict[str, str]) -> None:
    """A silence written for a renamed rule's old name still holds for one release: say so, once."""
    if silence.id not in _warned_silences:
        _warned_silences.add(silence.id)
        log.warning(
            "silence %s matches alertname %s, the old name of %s: it still silences it for one release; "
            "a new silence should name %s",
            silence.id, labels.get(PREVIOUS_ALERTNAME_LABEL), labels.get("alertname"), labels.get("alertname"),
        )  # fmt: skip


class _Inhibitors:
    """The alerts that may inhibit others, per inhibit rule and values of its `equal` labels.

    Why an index: each firing alert is checked against every alert as a possible source, so a
    fleet's many firing lag alerts made one evaluation quadratic in the alerts. Gathered
    lazily, once per evaluation (the alerts do not change while suppression is decided), and
    in the alerts' order, so the source a reason names is the first one, as a scan finds it.
    """

    def __init__(self, rules: list[InhibitRule], alerts: dict[str, dict[str, Any]]) -> None:
        self._rules = rules
        self._alerts = alerts
        self._sources: dict[int, dict[tuple[str | None, ...], list[dict[str, str]]]] = {}

    def _sources_of(self, n: int) -> dict[tuple[str | None, ...], list[dict[str, str]]]:
        if n not in self._sources:
            rule, index = self._rules[n], {}
            for alert in self._alerts.values():
                src = alert["labels"]
                if _matches_any_name(rule.source_match, src):
                    index.setdefault(tuple(src.get(k) for k in rule.equal), []).append(src)
            self._sources[n] = index
        return self._sources[n]

    def reason(self, labels: dict[str, str]) -> str:
        """Why `labels` is inhibited: by the first other alert an inhibit rule matches ("" if none)."""
        for n, rule in enumerate(self._rules):
            if not _matches_any_name(rule.target_match, labels):
                continue
            for src in self._sources_of(n).get(tuple(labels.get(k) for k in rule.equal), []):
                if src is not labels:
                    return f"inhibited by {src.get('alertname')} {json.dumps(src, sort_keys=True)}"
        return ""


class Notifier:
    """Holds alert and group state (JSON-serialisable, persisted by the engine each cycle)."""

    def __init__(self, alerts: AlertsConfig, rules: list[CompiledRule], external_url: str) -> None:
        self._rules = {r.name: r for r in rules}
        self._receivers: dict[str, AlertReceiver] = {r.name: r for r in alerts.receivers}
        self._group_by = list(alerts.group_by)
        self._inhibit: list[InhibitRule] = list(alerts.inhibit_rules)
        self._timing = Timing(
            parse_duration(alerts.group_wait, "alerts.group_wait"),
            parse_duration(alerts.group_interval, "alerts.group_interval"),
            parse_duration(alerts.repeat_interval, "alerts.repeat_interval"),
        )
        self._external_url = external_url
        self.alerts: dict[str, dict[str, Any]] = {}
        self.groups: dict[str, dict[str, Any]] = {}

    # -- persistence ---------------------------------------------------------------------
    def dump(self) -> dict[str, Any]:
        return {"alerts": self.alerts, "groups": self.groups}

    def load(self, state: dict[str, Any]) -> None:
        self.alerts = dict(state.get("alerts", {}))
        self.groups = dict(state.get("groups", {}))

    # -- one evaluation cycle ----------------------------------------------------------------
    def advance(
        self,
        conditions: list[Condition],
        now: float,
        silences: list[Silence],
        *,
        leading: bool = True,
        skip_group_wait: bool = False,
    ) -> tuple[list[Outgoing], list[dict[str, Any]]]:
        """What one evaluation at `now` changes: notifications due (when leading) and events.

        The live engine and the backtest both call this once per evaluation time, so `for`,
        grouping, the group timers, inhibition and silences mean the same in both.
        """
        events = self.update(conditions, now, silences)
        if not leading:
            return [], events
        outgoing, group_events = self.flush(now, skip_group_wait)
        return outgoing, events + group_events

    def next_timer(self) -> float | None:
        """The earliest time a timer may change something: a pending alert's `for` ending, a group's next look.

        Until then, with the same conditions and silences, `advance` changes nothing and sends
        nothing: a backtest uses this to skip such evaluations instead of stepping each one.
        """
        times = [group["next_flush"] for group in self.groups.values()]
        for alert in self.alerts.values():
            if alert["state"] == "pending":
                rule = self._rules.get(alert["rule"])
                times.append(alert["active_since"] + (rule.for_s if rule else 0.0))
        return min(times, default=None)

    # -- alert states ----------------------------------------------------------------------
    def update(self, conditions: list[Condition], now: float, silences: list[Silence]) -> list[dict[str, Any]]:
        """Advance every alert's state to `now`; return alert_events rows for what changed."""
        events: list[dict[str, Any]] = []
        seen: set[str] = set()
        for condition in conditions:
            fp = condition.fingerprint
            seen.add(fp)
            events += self._observe(fp, condition, now)
        for fp in [fp for fp in self.alerts if fp not in seen]:
            events += self._clear(fp, now)
        events += self._suppress(now, silences)
        return events

    def _observe(self, fp: str, condition: Condition, now: float) -> list[dict[str, Any]]:
        rule = condition.rule
        alert = self.alerts.setdefault(
            fp,
            {
                "rule": rule.name,
                "labels": condition.labels,
                "state": "pending",
                "active_since": now,
                "starts_at": None,
                "suppressed": "",
            },
        )
        alert["value"] = condition.value
        alert["value_text"] = rule.value_text(condition.value)
        alert["annotations"] = rule.render(condition.labels, condition.value, condition.extra)
        if alert["state"] == "pending" and now - alert["active_since"] >= rule.for_s:
            alert.update(state="firing", starts_at=now)
            return [make_event("firing", now, alert["labels"], **_value_of(alert), identity=(now,))]
        return []

    def _clear(self, fp: str, now: float) -> list[dict[str, Any]]:
        alert = self.alerts.pop(fp)
        if alert["state"] != "firing":
            return []
        for group in self.groups.values():
            if fp in group["notified"]:
                group["resolved"][fp] = self._view(fp, alert, "resolved", ends_at=now)
        return [make_event("resolved", now, alert["labels"], **_value_of(alert), identity=(alert["starts_at"],))]

    def _suppress(self, now: float, silences: list[Silence]) -> list[dict[str, Any]]:
        """Mark firing alerts silenced or inhibited; record each transition once."""
        events = []
        inhibitors = _Inhibitors(self._inhibit, self.alerts)
        for alert in self.alerts.values():
            if alert["state"] != "firing":
                continue
            reason = self._silenced_by(alert["labels"], silences) or inhibitors.reason(alert["labels"])
            if reason and reason != alert["suppressed"]:
                event = "silenced" if reason.startswith("silence") else "inhibited"
                events.append(
                    make_event(
                        event,
                        now,
                        alert["labels"],
                        **_value_of(alert),
                        detail=reason,
                        identity=(alert["starts_at"], reason),
                    )
                )
            alert["suppressed"] = reason
        return events

    @staticmethod
    def _silenced_by(labels: dict[str, str], silences: list[Silence]) -> str:
        before = as_before_rename(labels)
        for silence in silences:
            if silence.matches(labels):
                return f"silence {silence.id} by {silence.created_by}: {silence.comment}"
            if before is not None and silence.matches(before):
                _old_name_silence(silence, labels)
                return f"silence {silence.id} by {silence.created_by}: {silence.comment}"
        return ""

    # -- groups and notifications ----------------------------------------------------------
    def _timing_for(self, receiver: AlertReceiver) -> Timing:
        return receiver_type(receiver).timing(receiver, self._timing)

    def _view(self, fp: str, alert: dict[str, Any], status: str, ends_at: float | None = None) -> dict[str, Any]:
        return {
            "status": status,
            "labels": alert["labels"],
            "annotations": alert.get("annotations", {}),
            "starts_at": alert["starts_at"],
            "ends_at": ends_at,
            "fingerprint": fp,
            "generator_url": f"{self._external_url}/alerts?alertname={alert['labels'].get('alertname', '')}",
        }

    def _route(self, now: float, skip_group_wait: bool) -> dict[str, list[str]]:
        """Group id -> fingerprints of the visible firing alerts; opens groups as needed."""
        members: dict[str, list[str]] = {gid: [] for gid in self.groups}
        for fp, alert in sorted(self.alerts.items()):
            if alert["state"] != "firing" or alert["suppressed"]:
                continue
            rule = self._rules.get(alert["rule"])
            names = (rule.receivers if rule and rule.receivers else None) or tuple(self._receivers)
            for name in names:
                gid = self._open_group(name, alert["labels"], now, skip_group_wait)
                members.setdefault(gid, []).append(fp)
        return members

    def _open_group(self, receiver: str, labels: dict[str, str], now: float, skip_group_wait: bool) -> str:
        group_labels = {k: labels[k] for k in self._group_by if k in labels}
        group_key = "{}:" + json.dumps(group_labels, sort_keys=True)
        gid = hashlib.sha256(f"{receiver}|{group_key}".encode()).hexdigest()[:16]
        if gid not in self.groups:
            wait = 0.0 if skip_group_wait else self._timing_for(self._receivers[receiver]).group_wait_s
            self.groups[gid] = {
                "receiver": receiver,
                "group_key": group_key,
                "group_labels": group_labels,
                "incident_key": hashlib.sha256(f"{receiver}|{group_key}|{now!r}".encode()).hexdigest()[:24],
                "seq": 0,
                "next_flush": now + wait,
                "last_sent": None,
                "notified": [],
                "resolved": {},
            }
        return gid

    def flush(self, now: float, skip_group_wait: bool = False) -> tuple[list[Outgoing], list[dict[str, Any]]]:
        """Notifications due at `now` (and `repeat` events); closes groups that are done."""
        outgoing: list[Outgoing] = []
        events: list[dict[str, Any]] = []
        for gid, firing in self._route(now, skip_group_wait).items():
            group = self.groups[gid]
            if group["receiver"] not in self._receivers:
                del self.groups[gid]
                continue
            if now < group["next_flush"]:
                continue
            timing = self._timing_for(self._receivers[group["receiver"]])
            group["next_flush"] = now + timing.group_interval_s
            kind = self._due_kind(group, firing, now, timing)
            if kind:
                outgoing.append(self._notify(group, firing, kind, now))
                if kind == "repeat":
                    labels = {**group["group_labels"], "receiver": group["receiver"]}
                    events.append(
                        make_event(
                            "repeat",
                            now,
                            labels,
                            incident_key=group["incident_key"],
                            seq=group["seq"],
                            receiver=group["receiver"],
                        )
                    )
            if not firing and not group["resolved"]:
                del self.groups[gid]
        return outgoing, events

    @staticmethod
    def _due_kind(group: dict[str, Any], firing: list[str], now: float, timing: Timing) -> str:
        if set(firing) - set(group["notified"]) or group["resolved"]:
            return "firing" if firing else "resolved"
        if firing and group["last_sent"] is not None and now - group["last_sent"] >= timing.repeat_interval_s:
            return "repeat"
        return ""

    def _notify(self, group: dict[str, Any], firing: list[str], kind: str, now: float) -> Outgoing:
        views = [self._view(fp, self.alerts[fp], "firing") for fp in firing]
        views += list(group["resolved"].values())
        group["seq"] += 1
        group.update(last_sent=now, notified=list(firing), resolved={})
        notification = Notification(
            receiver=group["receiver"],
            group_key=group["group_key"],
            group_labels=group["group_labels"],
            status="firing" if firing else "resolved",
            alerts=tuple(AlertView(**v) for v in views),
            external_url=self._external_url,
            kind=kind,
            sent_at=now,
        )
        return Outgoing(notification, group["incident_key"], group["seq"])
