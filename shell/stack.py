"""`lagwatch up`, `lagwatch status` and `lagwatch broker`: the local stack in one command.

`up` starts the parts as separate processes, in dependency order, each announced with how
long it took to become ready: the embedded broker (when no bootstrap servers are configured),
the demo workload (on the embedded broker only: a configured cluster is watched, never written
to), the collectors, the Spark job, the dashboard and the HTTP API (`lagwatch
api`), which runs the alert engine on a thread of its process (`--with-alerts`). Ctrl-C sends
SIGTERM to all of them at once (none depends on another to stop; all depend on the broker,
which goes last), so the collectors flush and the Spark query stops between batches while the
broker still serves. Whatever has not stopped after `STOP_GRACE_S` is killed with its whole
process tree: a Spark job killed mid-batch is safe, since its Kafka offsets live in the checkpoint and a replayed
batch rewrites the very same lake files. The children also die with the supervisor if it is
killed outright (`shell.processes`). What is running is written to `state/stack.json`,
which `lagwatch status` reads (it also asks the API's /healthz and /readyz whether the lake
is fresh).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lagwatch import exit_codes
from lagwatch.command_line import lagwatch_command
from lagwatch.config import ClusterConfig, Config
from lagwatch.kafka import (
    EMBEDDED_BOOTSTRAP_ENV,
    EMBEDDED_DEMO_ENV,
    KafkaRefused,
    KafkaUnreachable,
    check_reachable,
    cluster_client_config,
)
from lagwatch.stop_signals import stop_on_signals
from shell import processes
from shell.broker import EmbeddedBroker, cluster_for

log = logging.getLogger(__name__)

#: Seconds after Ctrl-C before what has not stopped is killed; with the broker's own stop this
#: keeps the whole stack's stop under the 10 s an operator waits for (docs/operations.md).
STOP_GRACE_S = 7.0
#: CPU priority steps the dashboard runs below the rest: on a host with few cores, a page being
#: drawn yields to the pipeline, so the data stays fresh and the page waits instead
#: (bench/RECORDS.md, "Soak"). The collectors, the job and the alerting API keep full priority.
DASHBOARD_NICE = 10


@dataclass
class Component:
    name: str
    command: list[str]
    #: Returns True once the component is serving; None means "started is ready".
    ready: Callable[[], bool] | None = None
    #: Steps below the supervisor's CPU priority (os.nice).
    nice: int = 0
    process: subprocess.Popen[bytes] | None = None


def _state_file(config: Config) -> Path:
    return config.resolve_path("state") / "stack.json"


def _http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def _components(config: Config, with_demo: bool) -> list[Component]:
    dashboard_url = f"http://{config.dashboard.host}:{config.dashboard.port}"
    parts = []
    if with_demo:
        parts.append(
            Component(
                "demo",
                lagwatch_command(config, "demo"),
                lambda: _http_ok(f"http://127.0.0.1:{config.demo.jmx_sim_port}/metrics"),
            )
        )
    parts += [
        Component("collectors", lagwatch_command(config, "collect")),
        Component(
            "spark job",
            lagwatch_command(config, "stream"),
            lambda: any(config.resolve_path(config.lake.path).glob("pipeline_progress/date=2*/*.parquet")),
        ),
        Component(
            "dashboard",
            lagwatch_command(config, "dashboard", "--no-alerts"),
            lambda: _http_ok(f"{dashboard_url}/_stcore/health"),
            nice=DASHBOARD_NICE,
        ),
        _api_component(config),
    ]
    return parts


# --- the HTTP API (`lagwatch api`): started beside the dashboard, checked by `lagwatch status` ---
def _api_url(config: Config) -> str:
    return f"http://{config.api.host}:{config.api.port}"


def _api_component(config: Config) -> Component:
    """The API, with the alert engine on a thread of its process (`[alerts] run`): one
    Python process reading the lake instead of two, and the dashboard needs no launcher
    (bench/RECORDS.md, "Footprint"). An engine that stops ends the API, and `up` says so."""
    if config.alerts.run:
        return Component(
            "api + alerts",
            lagwatch_command(config, "api", "--with-alerts"),
            lambda: _http_ok(f"{_api_url(config)}/healthz"),
        )
    return Component("api", lagwatch_command(config, "api"), lambda: _http_ok(f"{_api_url(config)}/healthz"))


def _api_health(api_url: str) -> tuple[bool, str]:
    """(healthy, one line) from the API's /healthz and /readyz: ready means the lake is fresh."""
    if not _http_ok(f"{api_url}/healthz"):
        return False, f"{'api http':<20} {api_url:<17} NOT ANSWERING"
    try:
        with urllib.request.urlopen(f"{api_url}/readyz", timeout=5) as response:
            ready = json.loads(response.read())
    except urllib.error.HTTPError as exc:  # 503: answered, not ready
        ready = json.loads(exc.read())
    except OSError:
        return False, f"{'api http':<20} {api_url:<17} /readyz NOT ANSWERING"
    age = ready["lake"]["age_s"]
    lake = "no data" if age is None else f"lake {age:.0f} s old"
    quiet = [name for name, c in ready["components"].items() if not c["ok"]]
    verdict = "ready" if ready["ready"] else f"NOT READY (bound {ready['max_age_s']:.0f} s)"
    silent = f"; quiet: {', '.join(quiet)}" if quiet else ""
    return bool(ready["ready"]), f"{'api http':<20} {api_url:<17} {verdict}, {lake}{silent}"


def _start(component: Component, env: dict[str, str], logs: Path) -> None:
    with open(logs / f"{component.name.split()[0]}.log", "ab") as log_file:
        component.process = processes.spawn(component.command, env, log_file, nice=component.nice)


def _wait_ready(component: Component, stop: dict[str, bool], timeout_s: float = 180) -> bool:
    """True once ready; False if it exited, did not get ready in time, or a stop was requested."""
    started = time.monotonic()
    while time.monotonic() - started < timeout_s and not stop["requested"]:
        assert component.process is not None
        if component.process.poll() is not None:
            return False
        if component.ready is None or component.ready():
            return True
        time.sleep(0.25)
    return False


def _stop_parts(parts: list[Component]) -> None:
    started = time.monotonic()
    children = {part.name: part.process for part in parts if part.process is not None}
    times = processes.stop_all(children, STOP_GRACE_S)
    done = ", ".join(f"{name} {'killed' if t is None else f'{t:.1f} s'}" for name, t in times.items())
    print(f"stopped in {time.monotonic() - started:.1f} s ({done or 'nothing was running'})", flush=True)


def _write_state(config: Config, bootstrap: str, parts: list[Component]) -> None:
    state = {
        "bootstrap_servers": bootstrap,
        "dashboard_url": f"http://{config.dashboard.host}:{config.dashboard.port}",
        "api_url": _api_url(config),
        "components": {c.name: c.process.pid for c in parts if c.process},
        "supervisor": os.getpid(),
    }
    path = _state_file(config)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(state, indent=1))


def _start_in_order(
    parts: list[Component], env: dict[str, str], logs: Path, stop: dict[str, bool], started: Callable[[], None]
) -> bool:
    """Start each part once the one before is ready; False if one failed (a stop request is not a failure)."""
    for part in parts:
        if stop["requested"]:
            return True
        step = time.monotonic()
        _start(part, env, logs)
        started()
        if not _wait_ready(part, stop):
            if stop["requested"]:
                return True
            print(f"{part.name} failed to start: see {logs}", file=sys.stderr, flush=True)
            return False
        print(f"{part.name} ready in {time.monotonic() - step:.1f} s", flush=True)
    return True


def _watch(parts: list[Component], logs: Path, stop: dict[str, bool]) -> bool:
    """Until a stop is requested; False as soon as a part exits on its own."""
    while not stop["requested"]:
        for part in parts:
            if part.process and part.process.poll() is not None:
                code = part.process.returncode
                print(f"{part.name} exited with code {code}; see {logs}", file=sys.stderr, flush=True)
                return False
        time.sleep(0.5)
    return True


def _check_server_secrets(config: Config) -> None:
    """The dashboard's and the API's secrets, demanded before anything starts (ConfigError, exit 2),
    instead of a broker, a demo and a Spark job started only to see the dashboard refuse."""
    if config.dashboard.auth == "oidc":
        config.dashboard.oidc_secrets()
    if config.api.auth == "token":
        config.api.token()


def _with_demo(config: Config, no_demo: bool) -> bool:
    """The demo (and its simulated JMX) runs on the embedded broker only, unless `--no-demo`: on a
    configured cluster it would create topics and commit offsets in a cluster Lagwatch only watches."""
    if not config.on_embedded_broker:
        log.info("no demo: cluster %s is a configured cluster, which Lagwatch only watches", config.cluster.name)
        return False
    return not no_demo


def run_up(config: Config, args: argparse.Namespace) -> int:
    _check_server_secrets(config)
    stop = {"requested": False}

    def request_stop(signum: int, _frame: object) -> None:
        stop["requested"] = True

    signal.signal(signal.SIGTERM, request_stop)
    signal.signal(signal.SIGINT, request_stop)
    processes.become_subreaper()
    logs = config.resolve_path("state") / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    # Decided before cluster_for points the config at the broker it starts (then it looks configured).
    embedded = config.embedded_broker or bool(os.environ.get(EMBEDDED_BOOTSTRAP_ENV))
    try:
        with cluster_for(config) as config:
            bootstrap = config.cluster.bootstrap_servers
            check_reachable(cluster_client_config(config))
            print(f"broker {bootstrap} ready in {time.monotonic() - started:.1f} s", flush=True)
            with_demo = _with_demo(config, args.no_demo)
            env = dict(os.environ)
            if embedded:
                env |= {EMBEDDED_BOOTSTRAP_ENV: bootstrap, EMBEDDED_DEMO_ENV: "1" if with_demo else "0"}
            parts = _components(config, with_demo=with_demo)
            ok = False
            try:
                ok = _start_in_order(parts, env, logs, stop, lambda: _write_state(config, bootstrap, parts))
                if ok and not stop["requested"]:
                    url = f"http://{config.dashboard.host}:{config.dashboard.port}"
                    print(
                        f"Lagwatch is up in {time.monotonic() - started:.0f} s: open {url}  (Ctrl-C stops everything)",
                        flush=True,
                    )
                    ok = _watch(parts, logs, stop)
            finally:
                print("stopping: every component at once, then the broker", flush=True)
                _stop_parts(parts)
                _state_file(config).unlink(missing_ok=True)
    finally:
        processes.kill(processes.descendants(os.getpid()))  # nothing outlives `up`, whatever happened
        processes.reap()
    return exit_codes.OK if ok else exit_codes.FAILED


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except OSError:
        return False


def run_status(config: Config, args: argparse.Namespace) -> int:
    for line in cluster_lines(config):
        print(line)
    path = _state_file(config)
    if not path.exists():
        print(f"not running (no {path}); start it with `lagwatch up`")
        return 1
    state = json.loads(path.read_text())
    healthy = True
    for name, pid in state["components"].items():
        alive = _pid_alive(pid)
        healthy &= alive
        print(f"{name:<20} pid {pid:<8} {'running' if alive else 'DEAD'}")
    dashboard_ok = _http_ok(f"{state['dashboard_url']}/_stcore/health")
    print(f"{'dashboard http':<20} {state['dashboard_url']:<17} {'ok' if dashboard_ok else 'NOT ANSWERING'}")
    healthy &= dashboard_ok
    api_ok, api_line = _api_health(state.get("api_url", _api_url(config)))
    print(api_line)
    print(_commit_log_skipped_line(config))
    print(_groups_not_visible_line(config))
    healthy &= api_ok
    return 0 if healthy else 1


#: Seconds `lagwatch status` waits for each monitored cluster (all are asked at once).
STATUS_KAFKA_TIMEOUT_S = 3.0
#: How far back `lagwatch status` looks for the collectors' `up` samples in the lake.
STATUS_TARGETS_LOOKBACK = "10 minutes"


def cluster_lines(config: Config) -> list[str]:
    """One line per monitored cluster: answering or not (asked now, all at once), and its targets
    up and down as the newest `up` sample of each in the lake says. A cluster that is down is
    reported, not a failure of Lagwatch: it does not change the exit code."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=len(config.clusters), thread_name_prefix="status") as pool:
        answers = [pool.submit(_answers, config, cluster) for cluster in config.clusters]
    try:
        targets, unseen = _targets_up(config), "no `up` samples in the lake yet"
    except Exception as exc:  # no lake yet: say so, status goes on
        targets, unseen = {}, f"targets unknown ({type(exc).__name__})"
    lines = []
    for cluster, answer in zip(config.clusters, answers, strict=True):
        reachable = answer.result()
        up = targets.get(cluster.name)
        if up is None:
            seen = unseen
        else:
            down = sorted(name for name, value in up.items() if not value)
            seen = f"targets up {len(up) - len(down)}, down {len(down)}" + (f" ({', '.join(down)})" if down else "")
        label = f"cluster {cluster.name}"
        lines.append(f"{label:<20} {cluster.bootstrap_servers or '(embedded)':<17} {reachable}; {seen}")
    return lines


def _answers(config: Config, cluster: ClusterConfig) -> str:
    if not cluster.bootstrap_servers:
        return "embedded broker (runs with `lagwatch up`)"
    try:
        check_reachable(cluster_client_config(config, cluster), STATUS_KAFKA_TIMEOUT_S, cluster=cluster.name)
    except KafkaRefused as exc:  # a cause worth showing: credentials or certificate
        return f"NOT ANSWERING ({exc})"
    except KafkaUnreachable:
        return "NOT ANSWERING"
    return "answering"


def _targets_up(config: Config) -> dict[str, dict[str, float]]:
    """cluster -> target -> its newest `up` in the lake (1 up, 0 down); raises when there is no lake yet."""
    rows = _lake_rows(
        config,
        "SELECT cluster, source, broker, client_id, arg_max(last, window_start) FROM metrics_1m "
        f"WHERE metric = 'up' AND window_start >= now() - INTERVAL {STATUS_TARGETS_LOOKBACK} GROUP BY ALL",
    )
    targets: dict[str, dict[str, float]] = {}
    for cluster, source, broker, client_id, value in rows:
        name = f"broker-{broker}" if broker is not None else f"client-{client_id}" if client_id else source
        targets.setdefault(cluster, {})[name] = value
    return targets


def _lake_rows(config: Config, sql: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
    """The rows of one query over the lake's views (raises when there is no lake yet)."""
    from lagwatch.lake import connect_readonly

    con = connect_readonly(config.resolve_path(config.lake.path), config.resolve_path(config.lake.duckdb_path))
    try:
        return con.execute(sql, params).fetchall()
    finally:
        con.close()


def _newest_per(config: Config, metric: str, source: str, label: str) -> dict[Any, float]:
    """`metric`'s newest 1-minute value per `label` value in the lake (raises when there is no lake yet)."""
    rows = _lake_rows(
        config,
        f"SELECT {label}, arg_max(last, window_start) FROM metrics_1m "  # label: a column name of ours
        "WHERE metric = ? AND source = ? GROUP BY 1",
        [metric, source],
    )
    return dict(rows)


def _commit_log_skipped_line(config: Config) -> str:
    """The commit-log records skipped, per type, from the newest minute in the lake (not a health verdict)."""
    try:
        counts = {
            k: int(v)
            for k, v in _newest_per(config, "commit_log_records_skipped_total", "commitlog", "client_id").items()
        }
    except Exception as exc:  # no lake yet, or no such rows: say so, status goes on
        return f"{'commit log':<20} skipped records unknown ({type(exc).__name__})"
    if not counts:
        return f"{'commit log':<20} no skipped-record counts in the lake"
    by_type = ", ".join(f"{kind} {n}" for kind, n in sorted((k, v) for k, v in counts.items() if k is not None))
    return f"{'commit log':<20} {counts.get(None, 0)} records skipped" + (f" ({by_type})" if by_type else "")


def _groups_not_visible_line(config: Config) -> str:
    """Consumer groups the collector's principal may not describe, per cluster, newest minute (docs/operations.md)."""
    from lagwatch.vocabulary import GROUPS_NOT_VISIBLE_METRIC

    try:
        counts = _newest_per(config, GROUPS_NOT_VISIBLE_METRIC, "admin", "cluster")
    except Exception as exc:  # no lake yet: say so, status goes on
        return f"{'groups not visible':<20} unknown ({type(exc).__name__})"
    if not counts:
        return f"{'groups not visible':<20} no counts in the lake"
    return f"{'groups not visible':<20} " + ", ".join(f"{c} {int(n)}" for c, n in sorted(counts.items()))


def run_broker(config: Config, args: argparse.Namespace) -> int:
    """Run the embedded broker alone (handy for a second terminal or a quick experiment)."""
    stop = threading.Event()
    stop_on_signals(stop, "stopping the broker")
    with EmbeddedBroker() as broker:
        print(f"tansu broker on {broker.bootstrap_servers} (Ctrl-C stops it)", flush=True)
        while not stop.wait(0.5):
            pass
    return 0
