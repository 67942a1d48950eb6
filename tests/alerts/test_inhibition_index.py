"""Inhibition decided from an index of sources means what a scan over every alert meant.

The notifier gathers the alerts that may inhibit once per evaluation, by inhibit rule and the
values of its `equal` labels (a fleet's firing alerts each scanning all the others was
quadratic). What must not move: only a source with equal `equal` labels mutes; the reason
names the first source in the alerts' order; an alert matching both sides of a rule is never
muted by itself, but is by another; a pending source mutes too.
"""

from __future__ import annotations

from typing import Any

from alerts.evaluate import Condition
from alerts.notify import Notifier
from alerts.rules import CompiledRule, compile_rules
from lagwatch.config import parse_config

RULES: list[dict[str, Any]] = [
    {"name": "BrokerGone", "metric": "up", "by": ["broker"], "op": "==", "threshold": 0, "for": "1m"},
    {"name": "LagHigh", "metric": "total_lag", "by": ["group_id"], "op": ">", "threshold": 100},
    {"name": "Noisy", "metric": "total_lag", "by": ["group_id"], "op": ">", "threshold": 1,
     "labels": {"category": "noise"}},
]  # fmt: skip
INHIBIT: list[dict[str, Any]] = [
    {"source_match": {"alertname": "BrokerGone"}, "target_match": {"category": "lag"}, "equal": ["cluster"]},
    {"source_match": {"category": "noise"}, "target_match": {"category": "noise"}, "equal": ["cluster"]},
]


def _notifier() -> tuple[Notifier, dict[str, CompiledRule]]:
    config = parse_config(
        {
            "alerts": {
                "rules": RULES,
                "inhibit_rules": INHIBIT,
                "receivers": [{"name": "ops", "url": "http://o.invalid/"}],
            }
        },
        environ={},
    )
    rules = {r.name: r for r in compile_rules(config.alerts) if r.name in {"BrokerGone", "LagHigh", "Noisy"}}
    return Notifier(config.alerts, list(rules.values()), "http://lagwatch.invalid"), rules


def _condition(rules: dict[str, CompiledRule], rule: str, cluster: str, **by: str) -> Condition:
    compiled = rules[rule]
    labels = {"alertname": rule, "cluster": cluster, "severity": compiled.severity, **compiled.labels, **by}
    return Condition(compiled, labels, 500.0, {"reason": ""})


def _suppressed(notifier: Notifier) -> dict[tuple[str, str, str], str]:
    return {
        (a["labels"]["alertname"], a["labels"]["cluster"], a["labels"].get("group_id", "")): a["suppressed"]
        for a in notifier.alerts.values()
        if a["state"] == "firing"
    }


def test_sources_mute_only_with_equal_labels_first_source_named_never_by_itself() -> None:
    notifier, rules = _notifier()
    conditions = [
        _condition(rules, "BrokerGone", "east", broker="2"),  # pending (for 1m): still mutes
        _condition(rules, "BrokerGone", "east", broker="1"),
        _condition(rules, "LagHigh", "east", group_id="g1"),
        _condition(rules, "LagHigh", "west", group_id="g2"),
        _condition(rules, "Noisy", "east", group_id="g3"),
        _condition(rules, "Noisy", "west", group_id="g4"),
        _condition(rules, "Noisy", "west", group_id="g5"),
    ]
    notifier.advance(conditions, 1000.0, [])

    reasons = _suppressed(notifier)
    assert reasons[("LagHigh", "west", "g2")] == "", "a broker of another cluster must not mute"
    assert reasons[("LagHigh", "east", "g1")].startswith(
        'inhibited by BrokerGone {"alertname": "BrokerGone", "broker": "2"'
    )
    assert reasons[("Noisy", "east", "g3")] == "", "an alert alone in its cluster must not mute itself"
    assert '"group_id": "g5"' in reasons[("Noisy", "west", "g4")]
    assert '"group_id": "g4"' in reasons[("Noisy", "west", "g5")]


def test_a_source_that_clears_stops_muting_at_the_next_evaluation() -> None:
    notifier, rules = _notifier()
    broker = _condition(rules, "BrokerGone", "east", broker="1")
    lag = _condition(rules, "LagHigh", "east", group_id="g1")
    notifier.advance([broker, lag], 1000.0, [])
    assert _suppressed(notifier)[("LagHigh", "east", "g1")].startswith("inhibited by BrokerGone")

    notifier.advance([lag], 1015.0, [])
    assert _suppressed(notifier)[("LagHigh", "east", "g1")] == ""
