"""JMX targets and alert receivers: does something accept a TCP connection there?

A connect is all: no JMX login (a scrape is the collectors' job and costs a JVM round trip) and
no HTTP request, so no receiver ever gets a test page.
"""

from __future__ import annotations

import os
import socket
from urllib.parse import urlsplit

from lagwatch.config import ClusterConfig, Config, ConfigError
from lagwatch.config.alerts import AlertReceiver
from lagwatch.config.jmx import JmxTarget
from shell.check.outcome import Outcome

#: Seconds one TCP connect may take.
CONNECT_TIMEOUT_S = 2.0
_DEFAULT_PORTS = {"http": 80, "https": 443}


def url_address(url: str) -> tuple[str, int]:
    """(host, port) of an http(s) URL; ValueError when it names none."""
    parts = urlsplit(url)
    if not parts.hostname:
        raise ValueError(f"{url!r} names no host")
    port = parts.port or _DEFAULT_PORTS.get(parts.scheme)
    if port is None:
        raise ValueError(f"{url!r} names no port and its scheme has no default")
    return parts.hostname, port


def connect_error(host: str, port: int) -> str | None:
    """None when a TCP connection to host:port is accepted, else why not."""
    try:
        with socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S):
            return None
    except TimeoutError:
        return f"no answer within {CONNECT_TIMEOUT_S:.0f} s"
    except OSError as exc:
        return exc.strerror or str(exc)


def jmx_outcome(config: Config, cluster: ClusterConfig, target: JmxTarget) -> Outcome:
    subject = f"jmx {cluster.name}"
    if target == config.demo.simulated_target():
        return Outcome("PASS", subject, f"{target.name} is the demo's simulated target (served by `lagwatch demo`)")
    try:
        host, port = (
            url_address(target.url) if target.backend == "prometheus" and target.url else (target.host, target.port)
        )
    except ValueError as exc:
        return Outcome("FAIL", subject, f"{target.name}: {exc}", "fix the target's url")
    error = connect_error(host, port)
    if error is None:
        return Outcome("PASS", subject, f"{target.name} answers at {host}:{port}")
    what = "its exporter runs" if target.backend == "prometheus" else "the JVM has remote JMX on that port"
    fix = f"check the target's {'url' if target.backend == 'prometheus' else 'host and port'} and that {what}"
    return Outcome("FAIL", subject, f"{target.name}: cannot connect to {host}:{port} ({error})", fix)


def receiver_outcome(receiver: AlertReceiver) -> Outcome:
    subject = f"receiver {receiver.name}"
    try:
        url = receiver.target_url(os.environ)
    except ConfigError as exc:  # url_env names a variable that is not set
        return Outcome("FAIL", subject, str(exc), f"export {receiver.url_env} where Lagwatch runs")
    try:
        host, port = url_address(url)
    except ValueError as exc:
        return Outcome("FAIL", subject, str(exc), "fix its url in [[alerts.receivers]]")
    error = connect_error(host, port)
    if error is None:
        return Outcome("PASS", subject, f"{receiver.type} at {host}:{port} accepts connections (nothing sent)")
    fix = "check its url in [[alerts.receivers]], and that the receiver is up and reachable from this host"
    return Outcome("FAIL", subject, f"{receiver.type} at {host}:{port}: cannot connect ({error})", fix)


def jmx_outcomes(config: Config) -> list[Outcome]:
    lines = [
        jmx_outcome(config, cluster, target) for cluster in config.clusters for target in config.jmx_targets(cluster)
    ]
    return lines or [Outcome("SKIP", "jmx", "no JMX targets configured")]


def receiver_outcomes(config: Config) -> list[Outcome]:
    lines = [receiver_outcome(receiver) for receiver in config.alerts.receivers]
    return lines or [Outcome("SKIP", "receivers", "no alert receivers configured (alerts are recorded, not sent)")]
