"""Receivers: turn a group notification into a request body, and send it.

Each receiver type is one class behind the small `ReceiverType` protocol (body, url, timing),
registered under its config name: `Webhook` (Alertmanager's webhook format version 4, so
receivers written for Alertmanager work unchanged), `Slack` (a Slack-compatible
incoming-webhook body) and `Alertmanager` (pushes to a real Alertmanager, which groups and
routes itself). Delivery is the same for all of them.

Every request carries X-Lagwatch-Incident-Key and X-Lagwatch-Sequence (stable across
retries and restarts, so a receiver can drop a repeat) and, when the receiver's `secret_env`
variable is set, X-Lagwatch-Signature: sha256=<hex HMAC-SHA256 of the body>.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import json
import os
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, TypeVar

from lagwatch.config import AlertReceiver, ConfigError

INCIDENT_HEADER = "X-Lagwatch-Incident-Key"
SEQUENCE_HEADER = "X-Lagwatch-Sequence"
SIGNATURE_HEADER = "X-Lagwatch-Signature"
#: Which engine sent (host-pid): with several engines, shows which one leads.
SENDER_HEADER = "X-Lagwatch-Engine"
ZERO_TIME = "0001-01-01T00:00:00Z"


@dataclass(frozen=True)
class AlertView:
    """One alert as a notification shows it."""

    status: str  # firing | resolved
    labels: dict[str, str]
    annotations: dict[str, str]
    starts_at: float
    ends_at: float | None
    fingerprint: str
    generator_url: str


@dataclass(frozen=True)
class Notification:
    """What a group sends at one flush: all its firing alerts plus newly resolved ones."""

    receiver: str
    group_key: str
    group_labels: dict[str, str]
    status: str
    alerts: tuple[AlertView, ...]
    external_url: str
    kind: str  # firing | repeat | resolved (what made the group send)
    sent_at: float


def rfc3339(ts: float | None) -> str:
    if ts is None:
        return ZERO_TIME
    return dt.datetime.fromtimestamp(ts, dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _common(dicts: list[dict[str, str]]) -> dict[str, str]:
    if not dicts:
        return {}
    first = dicts[0]
    return {k: v for k, v in first.items() if all(d.get(k) == v for d in dicts[1:])}


@dataclass(frozen=True)
class Timing:
    """When a group sends: wait before its first notification, between looks, before a repeat."""

    group_wait_s: float
    group_interval_s: float
    repeat_interval_s: float


class ReceiverType(Protocol):
    """What one kind of receiver decides; everything else (outbox, retries, headers) is shared.

    Like Burrow's notifier modules: one class per type, registered under the name that
    `[[alerts.receivers]] type = "…"` uses, so adding a type touches no other module.
    """

    #: The `type` value in config.
    name: ClassVar[str]

    def body(self, receiver: AlertReceiver, n: Notification) -> Any:
        """The JSON document POSTed for this notification."""
        ...

    def url(self, receiver: AlertReceiver) -> str:
        """Where the POST goes."""
        ...

    def timing(self, receiver: AlertReceiver, configured: Timing) -> Timing:
        """Group timing for this receiver, given `[alerts]` group_wait / group_interval / repeat_interval."""
        ...


RECEIVER_TYPES: dict[str, ReceiverType] = {}

R = TypeVar("R", bound=type)


def register(cls: R) -> R:
    """Class decorator: make `cls` the receiver type named `cls.name`."""
    RECEIVER_TYPES[cls.name] = cls()
    return cls


def receiver_type(receiver: AlertReceiver) -> ReceiverType:
    try:
        return RECEIVER_TYPES[receiver.type]
    except KeyError:
        raise ConfigError(
            f"alerts.receivers {receiver.name!r}: type: unknown receiver type {receiver.type!r} "
            f"(known: {sorted(RECEIVER_TYPES)})"
        ) from None


def check_receiver_types(receivers: list[AlertReceiver]) -> None:
    """Every configured receiver names a registered type (ConfigError naming the receiver if not)."""
    for receiver in receivers:
        receiver_type(receiver)


def check_receiver_urls(receivers: list[AlertReceiver]) -> None:
    """Every receiver's URL is there, its `url_env` variable set: checked by the engine that sends
    when it starts (exit 2 naming the receiver and the variable), not at its first page."""
    for receiver in receivers:
        receiver.target_url(os.environ)


@register
class Webhook:
    """Alertmanager's webhook payload, version 4: bridges written for Alertmanager work unchanged."""

    name: ClassVar[str] = "webhook"

    def body(self, receiver: AlertReceiver, n: Notification) -> Any:
        return {
            "version": "4",
            "groupKey": n.group_key,
            "truncatedAlerts": 0,
            "status": n.status,
            "receiver": n.receiver,
            "groupLabels": n.group_labels,
            "commonLabels": _common([a.labels for a in n.alerts]),
            "commonAnnotations": _common([a.annotations for a in n.alerts]),
            "externalURL": n.external_url,
            "alerts": [
                {
                    "status": a.status,
                    "labels": a.labels,
                    "annotations": a.annotations,
                    "startsAt": rfc3339(a.starts_at),
                    "endsAt": rfc3339(a.ends_at),
                    "generatorURL": a.generator_url,
                    "fingerprint": a.fingerprint,
                }
                for a in n.alerts
            ],
        }

    def url(self, receiver: AlertReceiver) -> str:
        return receiver.target_url(os.environ)

    def timing(self, receiver: AlertReceiver, configured: Timing) -> Timing:
        return configured


@register
class Slack(Webhook):
    """A Slack-compatible incoming-webhook body ({"text", "attachments"}), grouped like a webhook."""

    name: ClassVar[str] = "slack"

    def body(self, receiver: AlertReceiver, n: Notification) -> Any:
        firing = [a for a in n.alerts if a.status == "firing"]
        name = n.group_labels.get("alertname") or n.alerts[0].labels.get("alertname", "alert")
        title = f"[{n.status.upper()}{f':{len(firing)}' if firing else ''}] {name}"
        attachments = [
            {
                "color": "danger" if a.status == "firing" else "good",
                "title": f"{a.status}: {a.labels.get('alertname', '')}",
                "text": a.annotations.get("summary") or ", ".join(f"{k}={v}" for k, v in sorted(a.labels.items())),
                "fields": [{"title": k, "value": v, "short": True} for k, v in sorted(a.labels.items())],
                "ts": int(a.starts_at),
            }
            for a in n.alerts
        ]
        return {"text": title, "attachments": attachments}


@register
class Alertmanager:
    """A real Alertmanager's POST /api/v2/alerts; it groups and routes itself.

    So its groups send at once and re-push firing alerts every `resend_s`, each with
    endsAt = now + 3 × resend_s: an engine that dies lets Alertmanager resolve them.
    """

    name: ClassVar[str] = "alertmanager"
    path: ClassVar[str] = "/api/v2/alerts"

    def body(self, receiver: AlertReceiver, n: Notification) -> Any:
        return [
            {
                "labels": a.labels,
                "annotations": a.annotations,
                "startsAt": rfc3339(a.starts_at),
                "endsAt": rfc3339(a.ends_at if a.status == "resolved" else n.sent_at + 3 * receiver.resend_s),
                "generatorURL": a.generator_url,
            }
            for a in n.alerts
        ]

    def url(self, receiver: AlertReceiver) -> str:
        base = receiver.target_url(os.environ).rstrip("/")
        return base if base.endswith(self.path) else base + self.path

    def timing(self, receiver: AlertReceiver, configured: Timing) -> Timing:
        return Timing(0.0, min(configured.group_interval_s, receiver.resend_s), receiver.resend_s)


def encode_body(receiver: AlertReceiver, n: Notification) -> bytes:
    """The exact bytes sent (stored in the outbox so a re-delivery is byte-identical)."""
    return json.dumps(receiver_type(receiver).body(receiver, n), sort_keys=True).encode()


def signature(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def request_headers(receiver: AlertReceiver, body: bytes, incident_key: str, seq: int, sender: str) -> dict[str, str]:
    headers = {
        **receiver.headers,
        "Content-Type": "application/json",
        "User-Agent": "lagwatch-alerts",
        INCIDENT_HEADER: incident_key,
        SEQUENCE_HEADER: str(seq),
        SENDER_HEADER: sender,
    }
    secret = os.environ.get(receiver.secret_env) if receiver.secret_env else None
    if secret:
        headers[SIGNATURE_HEADER] = signature(secret, body)
    return headers


class DeliveryError(Exception):
    """A delivery failed; `permanent` means retrying the same request cannot succeed."""

    def __init__(self, message: str, permanent: bool = False) -> None:
        super().__init__(message)
        self.permanent = permanent


def send(receiver: AlertReceiver, body: bytes, incident_key: str, seq: int, sender: str = "") -> int:
    """POST once within the receiver's timeout; return the HTTP status or raise DeliveryError."""
    request = urllib.request.Request(
        receiver_type(receiver).url(receiver),
        data=body,
        method="POST",
        headers=request_headers(receiver, body, incident_key, seq, sender),
    )
    try:
        with urllib.request.urlopen(request, timeout=receiver.timeout_s) as response:
            response.read()
            return int(response.status)
    except urllib.error.HTTPError as exc:
        # 408 and 429 are "try later"; other 4xx mean this request is wrong and stays wrong.
        permanent = 400 <= exc.code < 500 and exc.code not in (408, 429)
        raise DeliveryError(f"HTTP {exc.code} from {receiver.name}", permanent=permanent) from None
    except (urllib.error.URLError, OSError, TimeoutError) as exc:
        reason = getattr(exc, "reason", exc)
        raise DeliveryError(f"{receiver.name} unreachable: {reason}") from None
