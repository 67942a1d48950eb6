"""Backend `jmxquery`: the package the product names, with its defects wrapped.

jmxquery 0.6.0 runs its bundled jar, a fresh JVM (bench/RECORDS.md), per query() call. Its own
wrapper is not used; this module runs the same jar itself because:
- timeout: the wrapper's timeout raises AttributeError and the jar has no network timeout
  (it hangs for minutes on a silent port). Here the jar runs in its own process group under a wall-clock
  deadline and is killed when the deadline passes; the RMI timeouts are also set on its JVM.
- failures: connection and parse errors become TargetDown / per-metric errors, never a crash.
- one bad ObjectName fails the jar's whole batch ("bad-query"): names are validated in Python
  first, and if the jar still rejects a batch it is bisected so only the bad query is lost
  (each split costs one more JVM, all within the deadline).
- quotes in string values break its JSON: output is parsed record by record (one per line),
  with a field-wise fallback for a line json cannot read.
- credentials: the jar only takes them as `-u`/`-p` arguments. They are kept off the process
  command line by putting every jar argument in a Java launcher argument file (`java @file`,
  JDK 9+), created with mode 0600 in a private temp dir and removed when the JVM exits; `ps`
  and /proc/PID/cmdline show only `java … @/tmp/…/args`. The file exists on disk (readable
  only by this user) for the JVM's lifetime, about a second.
"""

from __future__ import annotations

import json
import logging
import os
import re
import signal
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import jmxquery

from collectors.jmx.backend import (
    JmxEndpoint,
    Reading,
    ReadResult,
    RemoteJmxBackend,
    TargetDown,
    as_number,
    missing_errors,
)
from collectors.jmx.mapping import MetricDef, matches, object_name_properties, sample_labels

log = logging.getLogger(__name__)

JAR_PATH = Path(jmxquery.JAR_PATH)
#: Small, quick-starting JVM for a process that lives about a second.
JVM_OPTIONS = ("-Xmx32m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xss512k")
_RECORD = re.compile(
    r'"mBeanName" : "(?P<name>.*?)", "attribute" : "(?P<attribute>.*?)", '
    r'"attributeType" : "(?P<type>[^"]*)"(?:, "value" : (?P<value>.*))?}\s*,?\s*$'
)
_ERROR = re.compile(r'\{\s*"error":\s*"(?P<kind>[^"]+)",\s*"message":\s*"(?P<message>.*)', re.S)


class BadQuery(Exception):
    """The jar refused the batch (a malformed ObjectName it could not parse)."""


def _argfile_line(arg: str) -> str:
    """One quoted argument in Java launcher @-file syntax."""
    return '"' + arg.replace("\\", "\\\\").replace('"', '\\"') + '"'


class JmxqueryBackend(RemoteJmxBackend):
    #: The `java` launcher that runs the jar.
    java = "java"

    def __init__(self, endpoint: JmxEndpoint) -> None:
        super().__init__(endpoint)
        self.jvm_runs = 0  # JVMs started (tests and the benchmark count them)

    def read(self, definitions: Sequence[MetricDef]) -> ReadResult:
        deadline = time.monotonic() + self.timeout_s
        result = ReadResult()
        valid = self.split_valid(definitions, result)
        if valid:
            self.read_batch(valid, deadline, result)
        result.errors.extend(missing_errors(definitions, result.readings, result.errors))
        return result

    def close(self) -> None:
        """Nothing persistent: every read is its own JVM."""

    def read_batch(self, definitions: Sequence[MetricDef], deadline: float, result: ReadResult) -> None:
        """Read `definitions` in one JVM run; on a query the jar refuses, halve the batch to find the bad one."""
        try:
            output = self._run_jar(definitions, deadline)
        except BadQuery as exc:
            if len(definitions) == 1:
                result.errors.append(f"{definitions[0].query()}: rejected by jmxquery: {exc}")
                return
            middle = len(definitions) // 2
            self.read_batch(definitions[:middle], deadline, result)
            self.read_batch(definitions[middle:], deadline, result)
            return
        for line in output.splitlines():
            self._parse_line(line, definitions, result)

    def _run_jar(self, definitions: Sequence[MetricDef], deadline: float) -> str:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TargetDown(f"{self.url}: scrape timeout of {self.timeout_s:g} s spent")
        with tempfile.TemporaryDirectory(prefix="lagwatch-jmxq-") as private:
            argfile = Path(private) / "args"
            fd = os.open(argfile, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as handle:
                handle.write("\n".join(_argfile_line(a) for a in self._jar_arguments(definitions, remaining)))
            stdout, stderr, code = self._run_process([self.java, f"@{argfile}"], remaining)
        return self._check_output(stdout, stderr, code)

    def _jar_arguments(self, definitions: Sequence[MetricDef], remaining_s: float) -> list[str]:
        rmi_ms = str(max(1, int(remaining_s * 1000)))
        args = [
            *JVM_OPTIONS,
            f"-Dsun.rmi.transport.tcp.responseTimeout={rmi_ms}",
            f"-Dsun.rmi.transport.proxy.connectTimeout={rmi_ms}",
            f"-Dsun.rmi.transport.tcp.handshakeTimeout={rmi_ms}",
            "-jar",
            str(JAR_PATH),
            "-url",
            self.url,
            "-json",
        ]
        if self.username:
            args += ["-u", self.username, "-p", self.password or ""]
        return [*args, "-q", "".join(f"{d.query()};" for d in definitions)]

    def _run_process(self, command: list[str], timeout_s: float) -> tuple[str, str, int]:
        """Run the JVM in its own process group; kill the group when the deadline passes."""
        self.jvm_runs += 1
        process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, start_new_session=True
        )
        try:
            stdout, stderr = process.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            raise TargetDown(f"{self.url}: no answer within {self.timeout_s:g} s (jmxquery JVM killed)") from None
        return stdout.decode("utf-8", "replace"), stderr.decode("utf-8", "replace"), process.returncode

    def _check_output(self, stdout: str, stderr: str, code: int) -> str:
        error = _ERROR.search(stdout)
        if error and not stdout.lstrip().startswith("["):
            message = error["message"].strip().rstrip('"}').replace("\n", " ")
            if error["kind"] == "bad-query":
                raise BadQuery(message)
            raise TargetDown(f"{self.url}: {error['kind']}: {message[:300]}")
        if code != 0 or not stdout.lstrip().startswith("["):
            raise TargetDown(f"{self.url}: jmxquery failed (exit {code}): {_java_failure(stderr or stdout)[:300]}")
        return stdout

    def _parse_line(self, line: str, definitions: Sequence[MetricDef], result: ReadResult) -> None:
        text = line.strip().lstrip(",").strip().rstrip("]").strip().rstrip(",").strip()
        if not text.startswith("{"):
            return
        record = _parse_record(text)
        if record is None:
            result.errors.append(f"unreadable jmxquery output line: {text[:200]}")
            return
        name, attribute, value = record
        for definition in definitions:
            if definition.attribute == attribute and matches(definition, name):
                number = as_number(value)
                if number is None:
                    result.errors.append(f"{name}/{attribute}: value {value!r} is not a number")
                else:
                    labels = sample_labels(definition, object_name_properties(name))
                    result.readings.append(Reading(definition, labels, number))
                return


def _java_failure(output: str) -> str:
    """The exception line of a Java stack trace (e.g. SecurityException: Authentication failed)."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    for line in lines:
        if "Exception" in line or "Error" in line:
            return line
    return lines[-1] if lines else "no output"


def _parse_record(text: str) -> tuple[str, str, object] | None:
    """(ObjectName, attribute, value) from one jar output record, JSON first, then field-wise."""
    try:
        record = json.loads(text)
        return record["mBeanName"], record["attribute"], record.get("value")
    except (json.JSONDecodeError, KeyError, TypeError):
        pass
    match = _RECORD.search(text)
    if not match:
        return None
    raw = (match["value"] or "null").strip()
    try:
        value: object = json.loads(raw)
    except json.JSONDecodeError:
        # a string with quotes inside (the jar does not escape them): not a number, reported as such
        value = raw[1:-1] if len(raw) >= 2 and raw[0] == raw[-1] == '"' else raw
    return match["name"], match["attribute"], value
