"""Receiver types are classes registered by name: a new one is used by the engine with no other change."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any, ClassVar

import pytest

from alerts.receivers import RECEIVER_TYPES, Notification, Timing, register
from harness import lake_rows
from lagwatch.config import AlertReceiver, ConfigError

LAG_RULE = {"name": "GroupLagHigh", "metric": "total_lag", "by": ["group_id"], "op": ">", "threshold": 100}


@pytest.fixture
def ticket_type() -> Iterator[type]:
    """A made-up ticketing receiver, registered for the test and removed afterwards."""

    @register
    class Ticket:
        name: ClassVar[str] = "ticket"

        def body(self, receiver: AlertReceiver, n: Notification) -> Any:
            return {"title": f"{n.status}: {n.group_labels.get('alertname')}", "count": len(n.alerts)}

        def url(self, receiver: AlertReceiver) -> str:
            return receiver.url + "/tickets"

        def timing(self, receiver: AlertReceiver, configured: Timing) -> Timing:
            return configured

    yield Ticket
    del RECEIVER_TYPES[Ticket.name]


def test_a_registered_class_receives_notifications(ticket_type, alert_config, engine_for, webhook_receiver) -> None:
    config = alert_config([LAG_RULE], receivers=[{"name": "desk", "type": "ticket", "url": webhook_receiver.url}])
    t0 = time.time()
    lake_rows.group_status(config.lake.path, t0, "g1", total_lag=400)
    engine_for(config).step(now=t0)
    [request] = webhook_receiver.received()
    assert request.path == "/hook/tickets"
    assert request.json() == {"title": "firing: GroupLagHigh", "count": 1}


def test_the_builtin_types_are_registered() -> None:
    assert {"webhook", "slack", "alertmanager"} <= set(RECEIVER_TYPES)


def test_an_unknown_type_is_refused_naming_the_receiver(alert_config, webhook_receiver) -> None:
    from alerts.rules import compile_rules

    config = alert_config([LAG_RULE], receivers=[{"name": "desk", "type": "pager", "url": webhook_receiver.url}])
    with pytest.raises(ConfigError, match=r"alerts.receivers 'desk': type: unknown receiver type 'pager'"):
        compile_rules(config.alerts)
