"""free_port picks below the ephemeral range, where no client socket can take the port before
its server binds it."""

from __future__ import annotations

import random
import socket

import pytest

from shell import broker
from shell.broker import PICK_PORTS_FROM, _ephemeral_start, free_port


def test_the_port_is_below_the_ephemeral_range_and_bindable() -> None:
    ports = {free_port() for _ in range(20)}
    assert all(PICK_PORTS_FROM <= port < _ephemeral_start() for port in ports), ports
    assert len(ports) > 1, "picked at random, not one fixed port"
    for port in ports:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind(("127.0.0.1", port))


def test_a_port_in_use_is_never_given(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as held:
        held.bind(("127.0.0.1", free_port()))
        held.listen()
        taken = held.getsockname()[1]
        draw = random.sample

        def taken_first(population: range, k: int) -> list[int]:
            return [taken, *draw(population, k)]

        monkeypatch.setattr(broker.random, "sample", taken_first)  # the held port is the first one tried
        assert all(free_port() != taken for _ in range(200))
