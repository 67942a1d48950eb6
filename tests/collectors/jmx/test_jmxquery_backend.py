"""jmxquery backend against the real JVM test double (each read starts the bundled jar's JVM)."""

from __future__ import annotations

import contextlib
import threading
import time
from pathlib import Path

from collectors.jmx.backend import JmxEndpoint, ReadResult
from collectors.jmx.jmxquery_backend import JmxqueryBackend
from collectors.jmx.mapping import METRICS, metrics_for
from harness.jmx_double import JmxDouble, SilentPort
from tests.collectors.jmx.support import broken_definition, cluster_id_definition, scrape, values


def test_refused_port_is_a_failed_scrape(jmx_double: JmxDouble) -> None:
    from shell.broker import free_port

    result = scrape(backend="jmxquery", port=free_port())
    assert not result.ok
    assert "connection-error" in result.errors[0]


def test_batch_rejected_by_the_jar_is_bisected_to_the_bad_query(jmx_double: JmxDouble) -> None:
    """Bypass the Python name check so the jar itself rejects the batch ("bad-query")."""
    jmx_double.set("leader_count", 55)
    good = next(d for d in METRICS if d.metric == "leader_count")
    bad = broken_definition("kafka.server:type=a,name=b,c")
    backend = JmxqueryBackend(JmxEndpoint("127.0.0.1", jmx_double.port, 20))
    result = ReadResult()
    backend.read_batch([bad, good], time.monotonic() + 20, result)
    assert [(r.definition.metric, r.value) for r in result.readings] == [("leader_count", 55.0)]
    assert result.errors == [f"{bad.query()}: rejected by jmxquery: Unterminated key property part"]
    assert backend.jvm_runs == 3  # the batch, then each half


def test_quotes_in_a_string_value_do_not_lose_the_other_metrics(jmx_double: JmxDouble) -> None:
    jmx_double.set("cluster_id", 'say "hi"')
    jmx_double.set("leader_count", 66)
    cluster_id = cluster_id_definition()
    result = scrape([*metrics_for("broker"), cluster_id], backend="jmxquery", port=jmx_double.port)
    assert result.ok
    assert values(result)[("leader_count", None, None)] == 66
    assert len(result.errors) == 1
    assert "ClusterId/Value: value 'say \"hi\"' is not a number" in result.errors[0]


def _java_command_lines() -> list[str]:
    lines = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            lines.append(cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace"))
        except OSError:
            continue
    return [line for line in lines if "java" in line]


def test_credentials_stay_off_the_command_line(start_jmx_double, silent_port: SilentPort) -> None:  # type: ignore[no-untyped-def]
    secured = start_jmx_double(username="monitor", password="s3cr3t-pw")
    ok = JmxqueryBackend(JmxEndpoint("127.0.0.1", secured.port, 20, username="monitor", password="s3cr3t-pw"))
    assert ok.read(metrics_for("broker")).readings
    wrong = scrape(backend="jmxquery", port=secured.port, username="monitor", password_env="LAGWATCH_NO_SUCH_ENV")
    assert not wrong.ok
    assert "Authentication failed" in wrong.errors[0]
    # While a JVM hangs on the silent port, look at every process's command line.
    hung = JmxqueryBackend(JmxEndpoint("127.0.0.1", silent_port.port, 8, username="monitor", password="s3cr3t-pw"))
    thread = threading.Thread(target=lambda: _ignore_target_down(hung), daemon=True)
    thread.start()
    seen: list[str] = []
    everything: list[str] = []
    deadline = time.monotonic() + 8
    while time.monotonic() < deadline and not seen:
        everything = _java_command_lines()
        seen = [line for line in everything if "lagwatch-jmxq-" in line]
        time.sleep(0.05)
    thread.join(15)
    assert seen, "the jmxquery JVM was never seen running"
    assert "@" in seen[0] and "monitor" not in seen[0] and " -p " not in seen[0]
    assert not [line for line in everything if "s3cr3t-pw" in line]


def _ignore_target_down(backend: JmxqueryBackend) -> None:
    from collectors.jmx.backend import TargetDown

    with contextlib.suppress(TargetDown):
        backend.read(metrics_for("broker"))
