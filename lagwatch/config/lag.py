"""`[lag]`: the knobs of the lag rules (the rules themselves are in spark_jobs/lag/rules.py)."""

from __future__ import annotations

from pydantic import Field, field_validator

from lagwatch.config.base import StrictModel, check_threshold_keys


class LagConfig(StrictModel):
    """How lag is judged: Burrow's sliding window of commits, with group membership as evidence.

    Each knob's rule is in the rules table (spark_jobs/lag/rules.py ``RULES``, and docs/rollups.md
    generated from it); docs/rollups.md also says how each knob moves detection time against false alarms.
    """

    #: The commit window every rule looks back over (rewind, stop's usual gap, lag_rising).
    window_s: float = Field(300, gt=0)
    #: Rule stop: the silence past which lag > 0 is STOP (unless the usual commit gap is longer).
    stop_after_s: float = Field(30, gt=0)
    #: Rule stop_empty: collector cycles in a row without members.
    empty_cycles: int = Field(2, ge=1)
    #: Rule stall_owned: collector cycles in a row at one committed offset.
    stall_cycles: int = Field(2, ge=2)
    #: Minimum (log_end_offset, ts) points before time lag is interpolated.
    min_history_points: int = Field(2, ge=2)
    #: Most (log_end_offset, ts) points kept per partition; older points are thinned, not dropped.
    history_points: int = Field(120, ge=4)
    #: Rules stall (no commit log, or commits) and lag_rising: observations (or commits) needed first.
    min_window_points: int = Field(3, ge=2)
    #: Rebalance storm (named in the group's reason): at least this many rebalances within
    #: rebalance_storm_window_s (every one counted with the commit log, else collector cycles).
    rebalance_storm_count: int = Field(5, ge=2)
    #: Rebalance storm: the window its rebalances are counted over (up to the group's newest observation).
    rebalance_storm_window_s: float = Field(600, gt=0)
    #: Per-group overrides: {"group-id" = {warn_lag = 1000, stop_after_s = 300}}.
    #: Keys: warn_lag, warn_time_lag_s (rules of the same names), stop_after_s.
    group_thresholds: dict[str, dict[str, float]] = Field(default_factory=dict)

    @property
    def window_ms(self) -> int:
        """window_s in milliseconds, the unit of sample timestamps: converted here, once."""
        return int(self.window_s * 1000)

    @property
    def rebalance_storm_window_ms(self) -> int:
        return int(self.rebalance_storm_window_s * 1000)

    @field_validator("group_thresholds")
    @classmethod
    def _known_threshold_keys(cls, groups: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
        for group, values in groups.items():
            check_threshold_keys(values, f"group {group!r}")
        return groups
