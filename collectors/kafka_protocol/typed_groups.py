"""Group types the admin client cannot read (share groups, streams groups), over the Kafka protocol.

Each broker answers ListGroups for the groups it coordinates, so the broker that lists a group is
the one to ask about it: no FindCoordinator round trip. Per broker, one connection (secured as the
cluster's client settings say), ApiVersions, ListGroups typed by the group type, then the type's
own requests, all within the admin cycle's deadline. A broker that fails is one error line of the
cycle. `TypedGroupReader` is the admin collector's step for one type: it runs beside the rest of
the cycle on its own thread and says once why it cannot read, instead of every cycle.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from typing import Any, Generic, TypeVar

from collectors.cycle_step import CycleStep
from collectors.kafka_protocol.connection import BrokerConnection, ClientSecurity
from collectors.kafka_protocol.security import SecurityRefused
from collectors.kafka_protocol.wire import BrokerError, ProtocolError, Reader

log = logging.getLogger(__name__)

#: One request on a broker's connection: (API key, version, body) → the answer's reader.
Ask = Callable[[int, int, bytes], Reader]
R = TypeVar("R")


def read_each_broker(
    brokers: Iterable[tuple[str, int]],
    client: tuple[str, float, ClientSecurity],
    read_broker: Callable[[BrokerConnection], None],
    kind: str,
) -> list[str]:
    """`read_broker` on a connection to each broker as `client` (client id, deadline, security);
    the errors of the brokers that failed, one line each."""
    client_id, deadline, security = client
    errors = []
    for host, port in brokers:
        try:
            with BrokerConnection(host, port, client_id, deadline, security) as connection:
                read_broker(connection)
        except (OSError, ProtocolError, BrokerError, SecurityRefused) as exc:  # OSError: refused, reset, timed out
            errors.append(f"{kind} on {host}:{port}: {exc}")
    return errors


def flexible_requests(connection: BrokerConnection) -> Ask:
    """`Ask` on `connection` for requests whose every version sent is flexible (tagged fields)."""
    return lambda key, version, body: connection.request(key, version, body, flexible=True)


class TypedGroupReader(Generic[R]):
    """The admin collector's step for one group type: `_read_brokers` does the reading, `_empty`,
    `_timed_out` and `_unspoken` describe its result, `kind` and `describe_api` name it in logs."""

    kind = "groups"
    describe_api = "DescribeGroups"
    #: The type's own logger, so its lines keep their module's name.
    logger = log

    def __init__(
        self, name: str, client_settings: dict[str, Any], group_allowed: Callable[[str], bool], *, cluster: str
    ) -> None:
        self._name = name
        self._group_allowed = group_allowed
        self._security, self._unsupported = ClientSecurity.or_reason(cluster, client_settings)
        self._step: CycleStep[R] = CycleStep(name, self.kind.replace(" ", "-"), self.logger)

    def close(self) -> None:
        self._step.close()

    def begin(self, metadata: Any, deadline: float) -> Callable[[], R]:
        """Start this cycle's reading; the returned call waits for it (until the deadline)."""
        return self._step.begin(lambda: self.read(metadata, deadline), deadline, self._timed_out)

    def read(self, metadata: Any, deadline: float) -> R:
        """This cycle's groups of the type, from the brokers the cycle's cluster metadata names."""
        if self._security is None:
            self._step.say(f"{self.kind} not read: {self._unsupported}")
            return self._empty()
        brokers = [(b.host, b.port) for _, b in sorted(metadata.brokers.items())]
        started = time.monotonic()
        read = self._read_brokers(brokers, deadline, self._security)
        if brokers and self._unspoken(read) == len(brokers):
            self._step.say(f"{self.kind} not read: the brokers do not speak {self.describe_api} (no {self.kind})")
        else:
            self._step.reading_again()
        self.logger.debug("%s: %s read in %.3f s", self._name, self.kind, time.monotonic() - started)
        return read

    def _read_brokers(self, brokers: list[tuple[str, int]], deadline: float, security: ClientSecurity) -> R:
        raise NotImplementedError

    def _empty(self) -> R:
        raise NotImplementedError

    def _timed_out(self) -> R:
        raise NotImplementedError

    def _unspoken(self, read: R) -> int:
        """How many brokers did not speak the type's requests."""
        raise NotImplementedError
