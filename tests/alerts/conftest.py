"""Alert-engine fixtures: a config with one webhook receiver, and engines closed after the test."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from alerts.engine import AlertEngine
from alerts.leader import AlwaysLeader
from lagwatch.config import Config

#: Short timings so tests advance the injected clock by seconds, not minutes.
FAST = {"group_wait": "0s", "group_interval": "1s", "repeat_interval": "1h", "evaluate_every_s": 0.5}


@pytest.fixture
def alert_config(make_config: Callable[..., Config], webhook_receiver: Any) -> Callable[..., Config]:
    """A Config whose alerts go to the test's webhook receiver; `rules` and overrides given per test."""

    def build(rules: list[dict[str, Any]], **alerts: Any) -> Config:
        receivers = alerts.pop("receivers", [{"name": "ops", "type": "webhook", "url": webhook_receiver.url}])
        section = {**FAST, "receivers": receivers, "rules": rules, "retry_initial_s": 0.2, "retry_max_s": 1, **alerts}
        return make_config(alerts=section)

    return build


@pytest.fixture
def engine_for() -> Iterator[Callable[[Config], AlertEngine]]:
    """Engines that always lead (leadership has its own test) and are closed afterwards."""
    engines: list[AlertEngine] = []

    def build(config: Config) -> AlertEngine:
        engine = AlertEngine(config, leadership=AlwaysLeader("test"))
        engines.append(engine)
        return engine

    yield build
    for engine in engines:
        engine.close()
