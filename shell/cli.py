"""`lagwatch` command line: one entry point, one sub-command per process.

Each sub-command loads and validates the whole config first, alert rules included (exit 2 on a
bad config, with the file and key named), so a mistake is caught by whichever command runs
first, not hours later by the one process that reads that key. Then it hands over to its part's
`run(config, args) -> int`. The exception is `init`, which writes the config and so cannot
need one (`SETUP_COMMANDS`). Parts are imported inside the runner of their command, so `lagwatch
sql` never pays for starting Spark. `--config` and `--log-level` are accepted before or after the
sub-command. Exit codes are the few in `lagwatch.exit_codes`, listed in the README.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable

from lagwatch import __version__, exit_codes
from lagwatch.config import Config, ConfigError, load_config
from shell import dashboard, demo, init, stack
from shell.broker import cluster_for
from shell.check.command import run as run_check

log = logging.getLogger("lagwatch")

Runner = Callable[[Config, argparse.Namespace], int]


def run_alerts(config: Config, args: argparse.Namespace) -> int:
    """`lagwatch alerts [backtest]`: imported when called, so no other command loads the engine."""
    if getattr(args, "alerts_command", None) == "backtest":
        from alerts.backtest_cli import run as run_backtest

        return run_backtest(config, args)
    from alerts.engine import run

    return run(config, args)


def run_api(config: Config, args: argparse.Namespace) -> int:
    """`lagwatch api [--with-alerts]`: the HTTP server, and with the flag the alert engine on a
    thread of the same process (what `lagwatch up` runs: one Python process and one DuckDB
    library reading the lake instead of two; bench/RECORDS.md, "Footprint").

    Not silent: if the engine's thread ends while the server still runs, the server is stopped
    and the command exits FAILED, so `lagwatch up` reports it and stops the stack, as it does
    for any component that exits.
    """
    from api.server import run as run_server

    if not args.with_alerts:
        return run_server(config, args)
    from alerts.engine import start_in_background

    engine = start_in_background(config)
    # The server re-raises the SIGTERM/SIGINT it stopped on once it is done; noting it here
    # (instead of the default handler ending the process) lets the engine close its state.
    previous = {signum: signal.signal(signum, _noted) for signum in (signal.SIGTERM, signal.SIGINT)}
    serving = threading.Event()
    threading.Thread(target=_stop_server_if_dead, args=(engine.is_alive, serving), daemon=True).start()
    try:
        code = run_server(config, args)
    finally:
        serving.set()
        engine_died = not engine.is_alive()
        engine.stop()
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    return exit_codes.FAILED if engine_died else code


def _noted(_signum: int, _frame: object) -> None:
    """A stop signal after the server has stopped: nothing left to do but return."""


def _stop_server_if_dead(alive: Callable[[], bool], serving_done: threading.Event) -> None:
    """SIGTERM to this process (the server stops cleanly on it) once `alive()` turns False."""
    while not serving_done.wait(1.0):
        if not alive():
            log.error("the alert engine stopped; stopping the API beside it")
            os.kill(os.getpid(), signal.SIGTERM)
            return


def run_collect(config: Config, args: argparse.Namespace) -> int:
    from collectors.runner import run

    with cluster_for(config) as config:
        return run(config, args)


def run_stream(config: Config, args: argparse.Namespace) -> int:
    from spark_jobs.job import run

    with cluster_for(config) as config:
        return run(config, args)


def run_sql(config: Config, args: argparse.Namespace) -> int:
    from lagwatch.sql import run

    return run(config, args)


#: sub-command -> the function implementing it. A part is imported when its command runs, so
#: no command pays for another's libraries (Spark, DuckDB, Streamlit); the shell's own are light.
COMMANDS: dict[str, Runner] = {
    "collect": run_collect,
    "stream": run_stream,
    "dashboard": dashboard.run,
    "alerts": run_alerts,
    "sql": run_sql,
    "demo": demo.run,
    "up": stack.run_up,
    "status": stack.run_status,
    "broker": stack.run_broker,
    "api": run_api,
    "check": run_check,
}

#: sub-command -> its function, for the commands that run before there is a config to load.
SETUP_COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "init": init.run,
}


def _add_commands(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    init.add_arguments(
        sub.add_parser("init", help="write a commented starter config.toml for a real cluster (flags or prompts)")
    )

    collect = sub.add_parser("collect", help="sample JMX metrics and consumer-group offsets into Kafka")
    collect.add_argument("--once", action="store_true", help="one cycle, flush, print a summary, exit")

    stream = sub.add_parser("stream", help="run the Spark job: samples topic -> windows, lag analytics -> lake")
    stream.add_argument("--available-now", action="store_true", help="process every sample in the topic, then exit")

    dashboard = sub.add_parser("dashboard", help="serve the Streamlit dashboard (and the alert engine beside it)")
    dashboard.add_argument(
        "--no-alerts", action="store_true", help="do not start the alert engine (it runs elsewhere, e.g. in `api`)"
    )

    alerts = sub.add_parser("alerts", help="run the alert engine alone")
    alerts.add_argument("--once", action="store_true", help="evaluate and deliver once, then exit")
    _add_backtest(alerts.add_subparsers(dest="alerts_command", metavar="{backtest}"))

    sql = sub.add_parser("sql", help="run a read-only DuckDB query over the lake")
    sql.add_argument("query", help='SQL, e.g. "select * from lag_1m limit 10"')
    sql.add_argument("--format", choices=["table", "csv", "json"], default="table")

    demo = sub.add_parser("demo", help="local workload: producers, consumers and lag")
    demo.add_argument("--duration-s", type=float, default=0, help="stop after this many seconds (0: run until stopped)")

    up = sub.add_parser("up", help="start everything: broker, demo, collectors, Spark job, alerts, dashboard, API")
    up.add_argument(
        "--no-demo",
        action="store_true",
        help="do not start the demo workload on the embedded broker (it never runs on a configured cluster)",
    )

    sub.add_parser("status", help="report each component's health")
    sub.add_parser("broker", help="run the embedded tansu broker alone and print its address")
    api = sub.add_parser("api", help="serve /metrics (Prometheus), Burrow's v3 API, /healthz and /readyz from the lake")
    api.add_argument("--with-alerts", action="store_true", help="run the alert engine in this process too")
    sub.add_parser("check", help="preflight: clusters, ACLs, JMX targets, JDK, paths, ports, receivers; one line each")


def _add_backtest(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    backtest = sub.add_parser("backtest", help="replay rules over the lake's history; nothing is sent")
    backtest.add_argument("--rules", metavar="FILE", help="TOML with [[alerts.rules]] / [[alerts.inhibit_rules]]")
    backtest.add_argument("--rule", action="append", metavar="NAME", help="only this rule (repeatable)")
    backtest.add_argument("--cluster", metavar="NAME", help="only this configured cluster (default: every one)")
    span = backtest.add_mutually_exclusive_group()
    span.add_argument("--since", default="1d", metavar="DURATION", help="the range ending now (default: 1d)")
    span.add_argument("--from", dest="from_", metavar="TS", help="range start, ISO 8601 (UTC unless a zone is given)")
    backtest.add_argument("--to", metavar="TS", help="range end, ISO 8601 (with --from)")
    backtest.add_argument("--format", choices=["table", "json"], default="table")
    backtest.add_argument("--against", metavar="FILE", help="compare with the rules of this file")
    backtest.add_argument("--ignore-silences", action="store_true", help="replay as if no silence had existed")
    backtest.add_argument("--list-rules", action="store_true", help="print the rules (TOML, or JSON) and exit")
    _add_common_options(backtest, default=argparse.SUPPRESS)


def _add_common_options(parser: argparse.ArgumentParser, default: object) -> None:
    """Options every command takes. On a sub-command their default is SUPPRESS, so a value given
    before the sub-command is kept unless it is given again after it."""
    parser.add_argument("--config", default=default, help="config file (default: $LAGWATCH_CONFIG, else ./config.toml)")
    parser.add_argument(
        "--log-level", default=default, choices=["DEBUG", "INFO", "WARNING", "ERROR"], help="default: INFO"
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lagwatch", description="Kafka monitoring and consumer-lag analytics")
    parser.add_argument("--version", action="version", version=f"lagwatch {__version__}")
    _add_common_options(parser, default=None)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_commands(sub)
    for command in sub.choices.values():
        _add_common_options(command, default=argparse.SUPPRESS)
    return parser


def load_and_validate(path: str | None) -> Config:
    """The config, with every alert rule compiled: a bad rule stops any command, not only alerts."""
    # The rule check needs the alert engine's knowledge of the lake (tables, columns, templates).
    from alerts.rules import compile_rules

    config = load_config(path)
    compile_rules(config.alerts)
    return config


def setup_logging(level: str) -> None:
    logging.basicConfig(
        level=level,
        format="%(asctime)s %(levelname)-5s %(name)s: %(message)s",
        datefmt="%Y-%m-%dT%H:%M:%S",
        stream=sys.stderr,
    )
    for noisy in ("py4j", "urllib3", "streamlit"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


_DOCUMENTED = {
    exit_codes.OK,
    exit_codes.FAILED,
    exit_codes.BAD_INPUT,
    exit_codes.KAFKA_UNREACHABLE,
    exit_codes.INTERRUPTED,
}


def _documented(code: int, command: str) -> int:
    """A part's own code if it is one the README lists; anything else is reported as FAILED."""
    if code in _DOCUMENTED:
        return code
    log.error("lagwatch %s ended with code %d; reporting it as %d (failed)", command, code, exit_codes.FAILED)
    return exit_codes.FAILED


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    args.log_level = args.log_level or "INFO"
    setup_logging(args.log_level)
    from lagwatch.java import JdkMissing
    from lagwatch.kafka import KafkaUnreachable

    try:
        if args.command in SETUP_COMMANDS:  # it writes the config: there is none to load yet
            return _documented(int(SETUP_COMMANDS[args.command](args)), args.command)
        config = load_and_validate(args.config)
        return _documented(int(COMMANDS[args.command](config, args) or exit_codes.OK), args.command)
    except ConfigError as exc:
        print(f"lagwatch: {exc}", file=sys.stderr)
        return exit_codes.BAD_INPUT
    except KafkaUnreachable as exc:
        print(f"lagwatch: {exc}", file=sys.stderr)
        return exit_codes.KAFKA_UNREACHABLE
    except JdkMissing as exc:
        print(f"lagwatch: {exc}", file=sys.stderr)
        return exit_codes.FAILED
    except KeyboardInterrupt:
        return exit_codes.INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
