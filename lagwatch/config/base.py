"""What every config section shares: the strict base model, the error type, durations, and
the validators more than one section uses.

Unknown keys are errors (``extra="forbid"``) in every section, because a silently ignored
``intreval_s`` is how monitoring quietly stops monitoring.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict


class ConfigError(Exception):
    """A configuration problem, already phrased for the operator (file and key named)."""


class StrictModel(BaseModel):
    """A config section: unknown keys refused, and assignments validated like the file is."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)


_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")
_UNIT_SECONDS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}


def duration_seconds(text: str) -> float:
    """ "90s", "2m", "1h30m", "0" -> seconds; anything else is a ValueError saying what is accepted."""
    text = text.strip()
    if text == "0":
        return 0.0
    parts = _DURATION_PART.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise ValueError(f'bad duration {text!r} (use e.g. "30s", "2m", "1h30m")')
    return sum(float(n) * _UNIT_SECONDS[u] for n, u in parts)


def parse_duration(text: str, where: str) -> float:
    """`duration_seconds`, with the failure as a ConfigError naming `where`."""
    try:
        return duration_seconds(text)
    except ValueError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def _valid_duration(text: str) -> str:
    duration_seconds(text)
    return text


#: A duration as written in the file ("30s", "1h30m"), checked when the config loads so every
#: command refuses a bad one, not only the process that reads it.
Duration = Annotated[str, AfterValidator(_valid_duration)]


def _valid_optional_duration(text: str) -> str:
    return _valid_duration(text) if text else text


#: A Duration, or "" for "not set".
OptionalDuration = Annotated[str, AfterValidator(_valid_optional_duration)]


def compiled_regexes(patterns: list[str]) -> list[str]:
    """Refuse a pattern that does not compile when the config loads, not at the first cycle."""
    for pattern in patterns:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ValueError(f"bad regex {pattern!r}: {exc}") from exc
    return patterns


#: Threshold keys a group or a whole cluster may override (rules of the same names in docs/rollups.md).
THRESHOLD_KEYS = frozenset({"warn_lag", "warn_time_lag_s", "stop_after_s"})


def check_threshold_keys(values: dict[str, float], whose: str) -> None:
    """Refuse a threshold no rule reads: `[lag.group_thresholds]` and `[[clusters]] lag` share the keys."""
    unknown = sorted(set(values) - THRESHOLD_KEYS)
    if unknown:
        raise ValueError(f"{whose}: unknown threshold(s) {unknown}; allowed: {sorted(THRESHOLD_KEYS)}")
