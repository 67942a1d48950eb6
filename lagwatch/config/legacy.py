"""Keys that moved to another section: the old spelling is still read, with a warning naming
the new one, so an existing config keeps working until it is edited."""

from __future__ import annotations

import logging
from typing import Any

from lagwatch.config.demo import SIMULATED_BROKER
from lagwatch.config.jmx import JmxTarget

#: The package's one logger name, so operators filter every config message the same way.
log = logging.getLogger("lagwatch.config")

RUN_ALERTS_DEPRECATED = "[dashboard] run_alerts is deprecated; use [alerts] run"
SIMULATED_TARGET_MOVED = (
    f'[[jmx.targets]] broker = "{SIMULATED_BROKER}" is the demo\'s simulated JMX, which [demo] adds by '
    "itself when the demo runs on the embedded broker (never beside a configured cluster): remove this target"
)


def moved_keys(data: Any) -> Any:
    """`data` (the raw top-level mapping) with every moved key in its new place.

    The caller's mapping is not changed: error messages name keys by walking the data as written.
    """
    return _moved_run_alerts(data)


def _moved_run_alerts(data: Any) -> Any:
    """`[dashboard] run_alerts` → `[alerts] run`; a `[alerts] run` written too wins."""
    if not isinstance(data, dict):
        return data
    dashboard, alerts = data.get("dashboard"), data.get("alerts", {})
    if not isinstance(dashboard, dict) or "run_alerts" not in dashboard or not isinstance(alerts, dict):
        return data  # nothing moved, or a malformed section the validation names as it stands
    value = dashboard["run_alerts"]
    if not isinstance(value, bool):  # named as written: moved, it would be reported as alerts.run
        raise ValueError(f"dashboard.run_alerts: must be true or false, got {value!r} ({RUN_ALERTS_DEPRECATED})")
    moved = {**data, "dashboard": {k: v for k, v in dashboard.items() if k != "run_alerts"}}
    if "run" in alerts:
        log.warning("%s ([alerts] run is set too and wins: run_alerts = %r is ignored)", RUN_ALERTS_DEPRECATED, value)
        return moved
    log.warning("%s (reading run_alerts = %r as [alerts] run)", RUN_ALERTS_DEPRECATED, value)
    moved["alerts"] = {**alerts, "run": value}
    return moved


def without_simulated_target(targets: list[JmxTarget]) -> list[JmxTarget]:
    """`targets` without the demo's simulated one, which older shipped configs listed in
    `[[jmx.targets]]`: `[demo]` owns it now, so it is scraped only on the embedded broker.
    Dropped after validation, so an error in another target still names it by its place in the file."""
    kept = [target for target in targets if target.broker != SIMULATED_BROKER]
    if len(kept) != len(targets):
        log.warning(SIMULATED_TARGET_MOVED)
    return kept
