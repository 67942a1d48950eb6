"""What this host must give Lagwatch: a JDK for Spark, writable folders, free ports."""

from __future__ import annotations

import os
import re
from pathlib import Path

from lagwatch.config import Config
from lagwatch.java import JDK_FIX, JdkMissing, require_java
from lagwatch.listen import listen_refused
from shell.check.outcome import Outcome

#: A Hadoop URI (hdfs://, s3a://): Spark writes there, not this host's file system.
_URI = re.compile(r"^[A-Za-z][\w+.-]*://")


def jdk_outcome() -> Outcome:
    try:
        java, major = require_java()
    except JdkMissing as exc:
        return Outcome("FAIL", "jdk", str(exc), JDK_FIX)
    return Outcome("PASS", "jdk", f"Java {major} at {java}")


def writable_folders(config: Config) -> list[tuple[str, str]]:
    """(config key, folder) of every place Lagwatch writes on this host."""
    return [
        ("lake.path", config.lake.path),
        ("lake.duckdb_path", str(Path(config.lake.duckdb_path).parent)),
        ("spark.checkpoint_dir", config.spark.checkpoint_dir),
        ("alerts.state_dir", config.alerts.state_dir),
        ("state", "state"),  # `lagwatch up`: its logs and stack.json, beside the config file
    ]


def path_outcome(config: Config, key: str, path: str) -> Outcome:
    subject = f"path {key}"
    if _URI.match(path):
        return Outcome("SKIP", subject, f"{path} is a Hadoop URI: Spark checks it when the job starts")
    folder = config.resolve_path(path)
    probe = folder / f".lagwatch-check-{os.getpid()}"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        where = "the `state` folder beside the config file" if key == "state" else key
        fix = f"make {folder} a folder this user may write (mkdir/chown/chmod), or point {where} elsewhere"
        return Outcome("FAIL", subject, f"{folder} is not writable ({exc.strerror or exc})", fix)
    return Outcome("PASS", subject, f"{folder} is writable")


def listeners(config: Config) -> list[tuple[str, str, int]]:
    """(config key, host, port) Lagwatch listens on; the demo's JMX simulator only on the embedded broker."""
    found = [
        ("dashboard.port", config.dashboard.host, config.dashboard.port),
        ("api.port", config.api.host, config.api.port),
    ]
    if config.on_embedded_broker:
        found.append(("demo.jmx_sim_port", "127.0.0.1", config.demo.jmx_sim_port))
    return found


def port_outcome(key: str, host: str, port: int, taken_by_config: str | None = None) -> Outcome:
    subject = f"port {key}"
    if taken_by_config:
        return Outcome("FAIL", subject, f"{port} is also {taken_by_config}", f"give {key} a port of its own")
    refused = listen_refused(key, host, port)
    if refused:
        return Outcome("FAIL", subject, refused.problem, refused.fix)
    return Outcome("PASS", subject, f"{host}:{port} is free")


def local_outcomes(config: Config) -> list[Outcome]:
    lines = [jdk_outcome()]
    lines += [path_outcome(config, key, path) for key, path in writable_folders(config)]
    seen: dict[int, str] = {}
    for key, host, port in listeners(config):
        lines.append(port_outcome(key, host, port, seen.get(port)))
        seen.setdefault(port, key)
    return lines
