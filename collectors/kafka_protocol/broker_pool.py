"""One cycle's connections to a cluster's brokers, one per address, all closed together; and the
first broker that answers, with what it speaks.

Why one home: every batched read (committed offsets, group descriptions) starts at whichever
broker answers first and then talks to each group's coordinator, and each must stop at the
cycle's deadline the same way: a TimeoutError is the deadline (no time for another broker), any
other failure moves on to the next broker and is named if none answers.
"""

from __future__ import annotations

from collections.abc import Sequence

from collectors.kafka_protocol.api_versions import api_versions
from collectors.kafka_protocol.connection import BrokerConnection, ClientSecurity
from collectors.kafka_protocol.security import SecurityRefused
from collectors.kafka_protocol.wire import BrokerError, ProtocolError

Address = tuple[str, int]
#: What a broker speaks (ApiVersions): request key → (min version, max version).
Versions = dict[int, tuple[int, int]]


class BrokerPool:
    def __init__(self, client_id: str, security: ClientSecurity) -> None:
        self._client_id, self._security = client_id, security
        self._connections: dict[Address, BrokerConnection] = {}

    def connection(self, address: Address, deadline: float) -> BrokerConnection:
        """The open connection to `address`, or a new one that gives up at `deadline`."""
        connection = self._connections.get(address)
        if connection is None:
            connection = BrokerConnection(address[0], address[1], self._client_id, deadline, self._security)
            self._connections[address] = connection
        return connection

    def drop(self, address: Address) -> None:
        """Close the connection to `address` (after it failed); the next use opens a new one."""
        connection = self._connections.pop(address, None)
        if connection is not None:
            connection.close()

    def close(self) -> None:
        for connection in self._connections.values():
            connection.close()
        self._connections.clear()

    def first_answering(
        self, brokers: Sequence[Address], deadline: float, software_version: str = "0"
    ) -> tuple[Address, Versions]:
        """The first of `brokers` that answers ApiVersions, and what it speaks. A TimeoutError at
        the deadline (the pool closed); an OSError naming each broker's failure if none answers."""
        failures = []
        for address in brokers:
            try:
                return address, api_versions(self.connection(address, deadline), software_version)
            except TimeoutError:
                self.close()
                raise  # the cycle's deadline: no time for another broker either
            except (OSError, ProtocolError, BrokerError, SecurityRefused) as exc:
                self.drop(address)
                failures.append(f"{address[0]}:{address[1]}: {exc}")
        raise OSError("no broker answered: " + "; ".join(failures or ["no broker in the cluster metadata"]))
