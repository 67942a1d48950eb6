"""Whether a step of the admin cycle reads through Lagwatch's own protocol client (many groups per
request) or through librdkafka (requests of its own per group), and saying why when it falls back.

Why one place: the committed offsets and the group descriptions make the same choice every cycle
for the same reasons (a security setting the own client refuses, brokers too old for the batched
requests, no broker reachable by it), and an operator reads each reason once in the log, again
only when it changes. Expected fallbacks are INFO (nothing is lost but CPU); a broker the own
client cannot reach while librdkafka can is a WARNING.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar

from collectors.kafka_protocol.connection import ClientSecurity
from collectors.kafka_protocol.group_offsets import NotSpoken
from collectors.kafka_protocol.security import SecurityRefused
from collectors.kafka_protocol.wire import BrokerError, ProtocolError

log = logging.getLogger(__name__)

#: False sends every group through librdkafka (the bench measures both paths with it).
PROTOCOL_CLIENT = True

T = TypeVar("T")


class ProtocolChoice:
    """One step's choice, kept across cycles: `batched` and `per_group` name the two ways in the log
    ("committed offsets by OffsetFetch in batches of groups", "… by one OffsetFetch per group")."""

    def __init__(
        self, name: str, security: tuple[ClientSecurity | None, str | None], *, batched: str, per_group: str
    ) -> None:
        self._name = name
        self._security, self._unsupported = security
        self._batched, self._per_group = batched, per_group
        self._said: str | None = None

    def attempt(self, read: Callable[[ClientSecurity], T]) -> T | None:
        """`read` with the own client's security where it can go; None (the reason said) to fall back.
        A TimeoutError (the cycle's deadline reached) goes to the caller: there is no time to fall back."""
        reason, level = self._unsupported, logging.INFO
        if self._security is not None and PROTOCOL_CLIENT:
            try:
                result = read(self._security)
                self._say(None, level)
                return result
            except TimeoutError:
                raise  # the cycle's deadline: librdkafka would have no time left either
            except NotSpoken as exc:
                reason = str(exc)
            except (OSError, ProtocolError, BrokerError, SecurityRefused) as exc:  # OSError: refused, reset
                reason, level = f"the protocol client reached no broker: {exc}", logging.WARNING
        if reason is not None:
            self._say(reason, level)
        return None

    def _say(self, reason: str | None, level: int) -> None:
        if reason == self._said:
            return
        if reason is None:
            log.info("%s: %s again", self._name, self._batched)
        else:
            log.log(level, "%s: %s (librdkafka), not in batches: %s", self._name, self._per_group, reason)
        self._said = reason
