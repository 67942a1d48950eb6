"""`lagwatch` command line: one entry point, one sub-command per process.

Each sub-command loads and validates the config first (exit 2 on a bad config, with the file
and key named), then hands over to its part's `run(config, args) -> int`. Parts are imported
lazily so `lagwatch sql` never pays for starting Spark, and a part's import error names the
part instead of breaking every command.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Callable

from lagwatch.config import ConfigError, load_config

EXIT_OK = 0
EXIT_CONFIG = 2
EXIT_UNREACHABLE = 3
EXIT_INTERRUPTED = 130

log = logging.getLogger("lagwatch")

#: sub-command -> "module:function" implementing it.
COMMANDS: dict[str, str] = {
    "collect": "collectors.runner:run",
    "stream": "spark_jobs.job:run",
    "dashboard": "dashboard.server:run",
    "alerts": "dashboard.alerts.engine:run",
    "sql": "lagwatch.sql:run",
    "demo": "lagwatch.demo:run",
    "up": "lagwatch.stack:run_up",
    "status": "lagwatch.stack:run_status",
    "broker": "lagwatch.stack:run_broker",
    "api": "api.server:run",
}


def _add_commands(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    collect = sub.add_parser("collect", help="sample JMX metrics and consumer-group offsets into Kafka")
    collect.add_argument("--once", action="store_true", help="one cycle, flush, print a summary, exit")

    stream = sub.add_parser("stream", help="run the Spark job: samples topic -> windows, lag analytics -> lake")
    stream.add_argument("--available-now", action="store_true", help="process every sample in the topic, then exit")

    sub.add_parser("dashboard", help="serve the Streamlit dashboard (and the alert engine beside it)")

    alerts = sub.add_parser("alerts", help="run the alert engine alone")
    alerts.add_argument("--once", action="store_true", help="evaluate and deliver once, then exit")

    sql = sub.add_parser("sql", help="run a read-only DuckDB query over the lake")
    sql.add_argument("query", help='SQL, e.g. "select * from lag_1m limit 10"')
    sql.add_argument("--format", choices=["table", "csv", "json"], default="table")

    demo = sub.add_parser("demo", help="local workload: producers, consumers and lag")
    demo.add_argument("--duration-s", type=float, default=0, help="stop after this many seconds (0: run until stopped)")

    up = sub.add_parser("up", help="start everything: broker, demo, collectors, Spark job, alerts, dashboard")
    up.add_argument("--no-demo", action="store_true", help="do not start the demo workload")

    sub.add_parser("status", help="report each component's health")
    sub.add_parser("broker", help="run the embedded tansu broker alone and print its address")
    sub.add_parser("api", help="serve /metrics (Prometheus), Burrow's v3 API, /healthz and /readyz from the lake")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lagwatch", description="Kafka monitoring and consumer-lag analytics")
    parser.add_argument("--config", help="config file (default: $LAGWATCH_CONFIG or ./config.toml)")
    parser.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    _add_commands(parser.add_subparsers(dest="command", required=True, metavar="COMMAND"))
    return parser


def _resolve(target: str) -> Callable[..., int]:
    module_name, function_name = target.split(":")
    return getattr(importlib.import_module(module_name), function_name)


def setup_logging(level: str) -> None:
    logging.basicConfig(
        level=level,
        format="%(asctime)s %(levelname)-5s %(name)s: %(message)s",
        datefmt="%Y-%m-%dT%H:%M:%S",
        stream=sys.stderr,
    )
    for noisy in ("py4j", "urllib3", "streamlit"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    setup_logging(args.log_level)
    try:
        config = load_config(args.config)
    except ConfigError as exc:
        print(f"lagwatch: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    from lagwatch.kafka import KafkaUnreachable

    try:
        return int(_resolve(COMMANDS[args.command])(config, args) or EXIT_OK)
    except ConfigError as exc:
        print(f"lagwatch: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    except KafkaUnreachable as exc:
        print(f"lagwatch: {exc}", file=sys.stderr)
        return EXIT_UNREACHABLE
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
