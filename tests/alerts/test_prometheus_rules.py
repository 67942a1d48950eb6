"""deploy/prometheus/lagwatch-rules.yml says what the engine's default rules say.

The file restates the default rules (alerts.rules.default_rules) in PromQL over the series
`lagwatch api` exports, for operators who alert from Prometheus. Why a check and not a
generated file: each expression is written by hand over other series with another shape
(`sum by (cluster)`, `increase(…[5m])`, `time() - …`), so a generator would be a second
hand-written mapping per rule and the YAML would stop being readable as written. The check
instead holds what must agree: for every default rule, a Prometheus rule of the same name, with
the same severity and `for`, and whose expression ends in the same comparison with the same
threshold (a status level as its severity index, an absence rule's `for` as the age it
compares). Summaries are not compared: the two template languages differ. A default rule that is
off by default (alerts.rules.OFF_BY_DEFAULT_RULES) ships commented out, so Prometheus has it off
too: it is checked as it reads once uncommented, and promtool accepts the file that way.

No YAML library is installed, so the file is read line by line; that covers its shape (one
line per key), and `promtool check rules` (tests/api/test_prometheus.py) checks it as YAML.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from alerts.rules import OFF_BY_DEFAULT_RULES, CompiledRule, compile_rules
from harness import lake_rows
from lagwatch.config import duration_seconds, parse_config
from lagwatch.vocabulary import STATUS_ORDER

RULES_FILE = Path(__file__).resolve().parents[2] / "deploy" / "prometheus" / "lagwatch-rules.yml"

#: Default rules without a Prometheus counterpart, and why (none today).
NOT_IN_PROMETHEUS: dict[str, str] = {}
#: Prometheus rules with no default rule behind them.
PROMETHEUS_ONLY = {"LagwatchApiDown": "watches the scrape of `lagwatch api` itself, which the engine cannot see"}

_COMPARISON = re.compile(r"(>=|<=|==|!=|>|<)\s*(-?[0-9.]+(?:[eE][-+]?[0-9]+)?)\s*$")
_RANGE = re.compile(r"\[([0-9]+[smhd])\]")
#: A commented-out rule's line: `# - alert: …` or `#   expr: …` (prose comments have one space after #).
_COMMENTED_RULE_LINE = re.compile(r"^(\s*)# (- alert:|  )")


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


def uncommented(text: str) -> str:
    """The rules file with its commented-out rules switched on, as an operator would uncomment them."""
    return "\n".join(_COMMENTED_RULE_LINE.sub(r"\1\2", line) for line in text.splitlines()) + "\n"


def prometheus_rules(text: str | None = None) -> dict[str, PrometheusRule]:
    """The rules of the file as shipped (or of `text`), by name."""
    rules: dict[str, PrometheusRule] = {}
    current: PrometheusRule | None = None
    for line in (RULES_FILE.read_text(encoding="utf-8") if text is None else text).splitlines():
        text = line.strip()
        if text.startswith("- alert:"):
            current = PrometheusRule(_value(text[2:]))
            assert current.name not in rules, f"{RULES_FILE.name}: rule {current.name} appears twice"
            rules[current.name] = current
        elif current is not None and text.startswith(("expr:", "for:", "severity:")):
            key = text.split(":", 1)[0]
            setattr(current, "for_" if key == "for" else key, _value(text))
    return rules


def default_rules(enable_all: bool = True) -> dict[str, CompiledRule]:
    """The defaults as the engine runs them with the shipped [alerts] thresholds (with those that
    are off by default switched on, unless `enable_all` is false)."""
    enabled = sorted(OFF_BY_DEFAULT_RULES) if enable_all else []
    alerts = parse_config({"alerts": {"enable_rules": enabled}}, environ={}).alerts
    return {rule.name: rule for rule in compile_rules(alerts)}


def test_every_default_rule_has_a_prometheus_counterpart_and_no_other() -> None:
    defaults, prometheus = default_rules(enable_all=False), prometheus_rules()
    assert set(defaults) - set(prometheus) == set(NOT_IN_PROMETHEUS)
    assert set(prometheus) - set(defaults) == set(PROMETHEUS_ONLY)


def test_the_rules_off_by_default_ship_commented_out() -> None:
    """Off in the engine, off in Prometheus: each is in the file only once uncommented."""
    commented = set(prometheus_rules(uncommented(RULES_FILE.read_text(encoding="utf-8")))) - set(prometheus_rules())
    assert commented == OFF_BY_DEFAULT_RULES - set(NOT_IN_PROMETHEUS)


def test_promtool_accepts_the_file_with_its_commented_rules_switched_on(tmp_path: Path) -> None:
    switched_on = tmp_path / "lagwatch-rules.yml"
    switched_on.write_text(uncommented(RULES_FILE.read_text(encoding="utf-8")))
    done = subprocess.run([PROMTOOL, "check", "rules", str(switched_on)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("name", sorted(set(default_rules()) - set(NOT_IN_PROMETHEUS)))
def test_the_prometheus_rule_says_what_the_default_says(name: str) -> None:
    rule, copy = default_rules()[name], prometheus_rules(uncommented(RULES_FILE.read_text(encoding="utf-8")))[name]
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


# -- the status rule: one alert per status word, in Prometheus as in the engine ------------------------

PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"
STATUS_RULE = "ConsumerGroupUnhealthy"
#: A group's (status, status rule id) at each minute: the status rule changes while the status does
#: not (the alert must stay the one alert), then the status worsens (a new alert saying STOP), then heals.
SEQUENCE = [("STALL", "stall"), ("STALL", "stall_owned"), ("STOP", "stop"), ("OK", "ok")]
#: The status word of the firing alert at each minute (None: nothing fires).
FIRING = ["STALL", "STALL", "STOP", None]


def _promtool_test(path: Path) -> Path:
    """A `promtool test rules` file: the exporter's series for SEQUENCE, and the alerts FIRING expects.

    A series leaves the exporter when its status or rule changes, so it ends with a staleness marker
    as Prometheus records it at the next scrape.
    """
    series = []
    for i, (status, rule) in enumerate(SEQUENCE):
        labels = f'cluster="prod",group="orders",status="{status}",rule="{rule}",group_type="classic"'
        values = " ".join(["_"] * i + [str(STATUS_ORDER.index(status)), "stale"])
        series.append(f"      - series: 'lagwatch_consumergroup_status{{{labels}}}'\n        values: '{values}'")
    checks = []
    for minute, status in enumerate(FIRING):
        expected = "[]"
        if status:
            labels = (f"{{severity: warning, category: lag, previous_alertname: ConsumerGroupStalled, cluster: prod, "
                      f"group: orders, status: {status}, group_type: classic}}")  # fmt: skip
            summary = f'{{summary: "Consumer group orders is {status}"}}'
            expected = f"\n          - exp_labels: {labels}\n            exp_annotations: {summary}"
        checks.append(f"      - eval_time: {minute}m\n        alertname: {STATUS_RULE}\n        exp_alerts: {expected}")
    path.write_text(
        f"rule_files:\n  - {RULES_FILE}\nevaluation_interval: 1m\ntests:\n  - interval: 1m\n    input_series:\n"
        + "\n".join(series)
        + "\n    alert_rule_test:\n"
        + "\n".join(checks)
        + "\n"
    )
    return path


def test_prometheus_raises_one_alert_per_status_word_with_the_word_as_a_label(tmp_path: Path) -> None:
    """promtool evaluates the shipped rule: the alert carries `status` (and no `rule`, so a status
    judged by another rule is still the same alert), the old name as `previous_alertname`, and the
    word in its summary."""
    done = subprocess.run([PROMTOOL, "test", "rules", str(_promtool_test(tmp_path / "test.yml"))],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_engine_raises_the_same_alerts_over_the_same_statuses(alert_config, engine_for) -> None:
    config = alert_config([], use_default_rules=True)
    t0 = time.time() - 300
    engine = engine_for(config)
    seen: list[tuple[str, float] | None] = []
    for minute, (status, rule) in enumerate(SEQUENCE):
        lake_rows.group_status(config.lake.path, t0 + 60 * minute, "orders", status=status, rule=rule)
        engine.step(now=t0 + 60 * minute + 1)
        firing = [(a["labels"]["status"], a["starts_at"]) for a in engine.notifier.alerts.values()
                  if a["rule"] == STATUS_RULE and a["state"] == "firing"]  # fmt: skip
        assert len(firing) <= 1
        seen.append(firing[0] if firing else None)

    assert [s[0] if s else None for s in seen] == FIRING
    assert seen[0] == seen[1], "the status rule changed, the status did not: still the one alert"
