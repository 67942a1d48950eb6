"""`lagwatch alerts backtest`: which rules, which range, and the report as a table or JSON.

A rules FILE holds `[alerts]` keys in the config's own syntax (`[[alerts.rules]]`,
`[[alerts.inhibit_rules]]`, …); they replace the same keys of the running config and the result
is validated exactly as a config file is, so an error names the file and the key. Relative
paths (the lake) still resolve against the config file.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import sys
import time
import tomllib
from pathlib import Path
from typing import Any

from alerts.backtest import backtest, compare
from alerts.evaluate import Grid
from alerts.rules import OFF_BY_DEFAULT_RULES, CompiledRule, compile_rules, current_rule_name, effective_rules
from lagwatch import exit_codes
from lagwatch.backtest_report import Comparison, Report, rule_toml, to_json
from lagwatch.config import Config, ConfigError, duration_seconds, parse_config

#: At most this many alerts and notifications are listed per rule in the table (JSON has all).
TABLE_ROWS = 50


def with_rules_file(config: Config, path: str) -> Config:
    """`config` with the `[alerts]` keys of the TOML file at `path`, validated as a config."""
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"rules file not found: {path}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"invalid TOML in {path}: {exc}") from None
    unknown = sorted(set(data) - {"alerts"})
    if unknown:
        raise ConfigError(f"invalid rules file {path}:\n  {', '.join(unknown)}: unknown key (only [alerts] is read)")
    # Only [alerts] changes: it is validated alone, with the file's path in its errors, and put in
    # a copy of the loaded config (clusters, environment secrets and all, as they were loaded).
    alerts = {**config.alerts.model_dump(by_alias=True), **data.get("alerts", {})}
    result = config.model_copy(update={"alerts": parse_config({"alerts": alerts}, path, environ={}).alerts})
    try:
        compile_rules(result.alerts)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    return result


def chosen_rules(rules: list[CompiledRule], names: list[str] | None) -> list[str]:
    """The rules `--rule` names (all without it); a renamed rule's old name picks it, with a warning,
    unless a rule of that name is configured."""
    known = [r.name for r in rules]
    names = [n if n in known else current_rule_name(n, "--rule") for n in names or []]
    unknown = sorted(set(names) - set(known))
    if unknown:
        raise ConfigError(f"--rule: unknown rule(s) {unknown} (rules: {', '.join(known)})")
    return list(names) if names else known


def _timestamp(text: str, option: str) -> float:
    try:
        moment = dt.datetime.fromisoformat(text)
    except ValueError:
        raise ConfigError(f"{option}: not an ISO 8601 time: {text!r}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return moment.timestamp()


def grid_for(args: argparse.Namespace, every_s: float, now: float) -> Grid:
    """--from/--to as given; --since ends at the last whole evaluation interval, so reruns agree."""
    if args.from_ or args.to:
        if not (args.from_ and args.to):
            raise ConfigError("--from and --to go together")
        since, until = _timestamp(args.from_, "--from"), _timestamp(args.to, "--to")
    else:
        until = math.floor(now / every_s) * every_s
        since = until - duration_seconds(args.since)
    if until <= since:
        raise ConfigError(f"the range is empty: {since} .. {until}")
    return Grid.over(since, until, every_s)


def with_named_rules_enabled(config: Config, names: list[str] | None) -> Config:
    """`config` with the off-by-default rules `--rule` names switched on: naming one is asking to
    replay it, whether or not `[alerts] enable_rules` turns it on for the engine."""
    named = [n for n in names or [] if n in OFF_BY_DEFAULT_RULES and n not in config.alerts.enable_rules]
    if not named:
        return config
    alerts = config.alerts.model_copy(update={"enable_rules": [*config.alerts.enable_rules, *named]})
    return config.model_copy(update={"alerts": alerts})


def _run_one(config: Config, args: argparse.Namespace, grid: Grid) -> Report:
    config = with_named_rules_enabled(config, args.rule)
    rules = compile_rules(config.alerts)
    cluster = args.cluster
    if cluster:
        try:
            config.cluster_named(cluster)
        except KeyError as exc:  # its message names the clusters there are
            raise ConfigError(f"--cluster: {exc.args[0]}") from None
    chosen = chosen_rules(rules, args.rule)
    return backtest(config, rules, chosen, grid, ignore_silences=args.ignore_silences, cluster=cluster)


def _time(ts: float | None) -> str:
    return "-" if ts is None else dt.datetime.fromtimestamp(ts, dt.UTC).strftime("%Y-%m-%d %H:%M:%S")


def _labels(labels: dict[str, str]) -> str:
    hidden = {"alertname", "severity", "category"}
    return " ".join(f"{k}={v}" for k, v in sorted(labels.items()) if k not in hidden)


def _rule_lines(report: Report) -> list[str]:
    lines = []
    for rule in report.rules:
        totals = rule.totals
        receivers = ", ".join(f"{r}: {n}" for r, n in sorted(totals["by_receiver"].items())) or "none"
        lines.append(
            f"\n{rule.name}: {totals['alerts']} alerts, {totals['notifications']} notifications ({receivers}), "
            f"firing {totals['firing_s'] / 3600:.2f} h"
        )
        for alert in rule.alerts[:TABLE_ROWS]:
            muted = f"  [{alert.suppressed.split(':')[0]}]" if alert.suppressed else ""
            lines.append(f"  alert  {_time(alert.starts_at)} → {_time(alert.ends_at)}  {_labels(alert.labels)}{muted}")
        for n in rule.notifications[:TABLE_ROWS]:
            lines.append(
                f"  notify {_time(n.sent_at)}  {n.receiver}  {n.kind}  {n.firing} firing, {n.resolved} resolved"
            )
        hidden = max(0, len(rule.alerts) - TABLE_ROWS) + max(0, len(rule.notifications) - TABLE_ROWS)
        if hidden:
            lines.append(f"  … {hidden} more rows (--format json lists all)")
    return lines


def _change_lines(report: Report) -> list[str]:
    if not report.status_changes:
        return []
    lines = ["\nStatus changes (seconds until notified, '-' never):"]
    for change in report.status_changes[:TABLE_ROWS]:
        delays = ", ".join(f"{rule} {'-' if d is None else f'{d:.0f}'}" for rule, d in change.delays.items())
        group = f"{change.cluster}/{change.group_id}" if len(report.clusters) > 1 else change.group_id
        lines.append(f"  {_time(change.at)}  {group} {change.previous}→{change.status}  {delays}")
    return lines


def table(report: Report) -> str:
    head = (
        f"Backtest of cluster{'s' if len(report.clusters) > 1 else ''} {', '.join(report.clusters)}, "
        f"{_time(report.since)} → {_time(report.until)} UTC, "
        f"every {report.evaluate_every_s:g} s ({report.steps} evaluations, {report.elapsed_s:.1f} s)"
    )
    notes = []
    if report.stand_in_receiver:
        notes.append("no receiver configured: notifications planned for one stand-in receiver")
    if not report.silences_applied:
        notes.append("silences ignored")
    return "\n".join([head, *notes, *_rule_lines(report), *_change_lines(report)])


def comparison_table(result: Comparison) -> str:
    lines = ["=== A (current rules) ===", table(result.a), "", "=== B (--against) ===", table(result.b), ""]
    for side, alerts in (("A", result.only_a), ("B", result.only_b)):
        lines.append(f"Alerts only {side} raises: {len(alerts)}")
        lines += [f"  {a.rule}  {_time(a.starts_at)} → {_time(a.ends_at)}  {_labels(a.labels)}" for a in alerts]
    return "\n".join(lines)


def list_rules(config: Config, fmt: str) -> str:
    """The rules a backtest can replay (configured and default), as JSON or as config TOML."""
    rules = [r.model_dump(by_alias=True, exclude_defaults=True) for r in effective_rules(config.alerts)]
    for rule, model in zip(rules, effective_rules(config.alerts), strict=True):
        rule["name"] = model.name
    if fmt == "json":
        return json.dumps(rules)
    return "\n".join(rule_toml(rule) for rule in rules)


def run(config: Config, args: argparse.Namespace) -> int:
    """`lagwatch alerts backtest`."""
    if args.list_rules:
        base = with_rules_file(config, args.rules) if args.rules else config
        print(list_rules(base, args.format))
        return exit_codes.OK
    grid = grid_for(args, config.alerts.evaluate_every_s, time.time())
    base = with_rules_file(config, args.rules) if args.rules else config
    report = _run_one(base, args, grid)
    document: Any = report
    if args.against:
        document = compare(report, _run_one(with_rules_file(config, args.against), args, grid))
    if args.format == "json":
        print(to_json(document))
    else:
        print(comparison_table(document) if isinstance(document, Comparison) else table(document))
    sys.stdout.flush()
    return exit_codes.OK
