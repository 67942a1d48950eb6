"""deploy/prometheus/lagwatch-rules.yml says what the engine's default rules say.

The file restates the default rules (alerts.rules.default_rules) in PromQL over the series
`lagwatch api` exports, for operators who alert from Prometheus. Why a check and not a
generated file: each expression is written by hand over other series with another shape
(`sum by (cluster)`, `increase(…[5m])`, `time() - …`), so a generator would be a second
hand-written mapping per rule and the YAML would stop being readable as written. The check
instead holds what must agree: for every default rule, a Prometheus rule of the same name, with
the same severity and `for`, and whose expression ends in the same comparison with the same
threshold (a status level as its severity index, an absence rule's `for` as the age it
compares). Summaries are not compared: the two template languages differ.

No YAML library is installed, so the file is read line by line; that covers its shape (one
line per key), and `promtool check rules` (tests/api/test_prometheus.py) checks it as YAML.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from alerts.rules import CompiledRule, compile_rules
from lagwatch.config import duration_seconds, parse_config
from lagwatch.vocabulary import STATUS_ORDER

RULES_FILE = Path(__file__).resolve().parents[2] / "deploy" / "prometheus" / "lagwatch-rules.yml"

#: Default rules without a Prometheus counterpart, and why (none today).
NOT_IN_PROMETHEUS: dict[str, str] = {}
#: Prometheus rules with no default rule behind them.
PROMETHEUS_ONLY = {"LagwatchApiDown": "watches the scrape of `lagwatch api` itself, which the engine cannot see"}

_COMPARISON = re.compile(r"(>=|<=|==|!=|>|<)\s*(-?[0-9.]+(?:[eE][-+]?[0-9]+)?)\s*$")
_RANGE = re.compile(r"\[([0-9]+[smhd])\]")


@dataclass
class PrometheusRule:
    name: str
    expr: str = ""
    for_: str = "0s"
    severity: str = ""

    def comparison(self) -> tuple[str, float]:
        """The expression's final `<op> <number>`: what the rule's op and threshold map to."""
        match = _COMPARISON.search(self.expr)
        assert match, f"{self.name}: expr does not end in a comparison with a number: {self.expr!r}"
        return match.group(1), float(match.group(2))


def _value(line: str) -> str:
    value = line.split(":", 1)[1].strip()
    assert value[:1] not in ("|", ">"), f"multi-line value not read by this check: {line!r}"
    return value.strip("\"'")


def prometheus_rules(path: Path = RULES_FILE) -> dict[str, PrometheusRule]:
    rules: dict[str, PrometheusRule] = {}
    current: PrometheusRule | None = None
    for line in path.read_text(encoding="utf-8").splitlines():
        text = line.strip()
        if text.startswith("- alert:"):
            current = PrometheusRule(_value(text[2:]))
            assert current.name not in rules, f"{path.name}: rule {current.name} appears twice"
            rules[current.name] = current
        elif current is not None and text.startswith(("expr:", "for:", "severity:")):
            key = text.split(":", 1)[0]
            setattr(current, "for_" if key == "for" else key, _value(text))
    return rules


def default_rules() -> dict[str, CompiledRule]:
    """The defaults as the engine runs them with the shipped [alerts] thresholds."""
    return {rule.name: rule for rule in compile_rules(parse_config({}, environ={}).alerts)}


def test_every_default_rule_has_a_prometheus_counterpart_and_no_other() -> None:
    defaults, prometheus = default_rules(), prometheus_rules()
    assert set(defaults) - set(prometheus) == set(NOT_IN_PROMETHEUS)
    assert set(prometheus) - set(defaults) == set(PROMETHEUS_ONLY)


@pytest.mark.parametrize("name", sorted(set(default_rules()) - set(NOT_IN_PROMETHEUS)))
def test_the_prometheus_rule_says_what_the_default_says(name: str) -> None:
    rule, copy = default_rules()[name], prometheus_rules()[name]
    assert copy.severity == rule.severity, f"{name}: severity"
    op, number = copy.comparison()
    if rule.kind == "status":
        assert (op, number) == (">=", STATUS_ORDER.index(rule.level)), f"{name}: status level {rule.level}"
        assert duration_seconds(copy.for_) == rule.for_s, f"{name}: for"
    elif rule.kind == "absence":
        assert (op, number) == (">", rule.for_s), f"{name}: age compared must be the rule's for"
        assert duration_seconds(copy.for_) == 0, f"{name}: the age already waits the rule's for"
    else:
        assert (op, number) == (rule.op, rule.threshold), f"{name}: comparison"
        assert duration_seconds(copy.for_) == rule.for_s, f"{name}: for"
    if rule.source.table == "dead_letters":
        windows = _RANGE.findall(copy.expr)
        assert [duration_seconds(w) for w in windows] == [rule.window_s], f"{name}: window"
