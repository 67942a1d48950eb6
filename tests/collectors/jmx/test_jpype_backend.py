"""jpype backend against the real JVM test double: one in-process JVM, kept-open connections."""

from __future__ import annotations

import gc

from collectors.jmx.backend import JmxEndpoint
from collectors.jmx.jpype_backend import JpypeBackend
from collectors.jmx.mapping import metrics_for
from harness.jmx_double import JmxDouble
from shell.broker import free_port
from tests.collectors.jmx.support import broken_definition, cluster_id_definition, scrape, values


def test_refused_port_is_a_failed_scrape() -> None:
    result = scrape(backend="jpype", port=free_port())
    assert not result.ok
    assert "Connection refused" in result.errors[0]


def test_string_value_is_an_error_for_that_metric_only(jmx_double: JmxDouble) -> None:
    jmx_double.set("cluster_id", 'quote"d')
    cluster_id = cluster_id_definition()
    result = scrape([*metrics_for("broker"), cluster_id], backend="jpype", port=jmx_double.port)
    assert result.ok
    assert len(result.errors) == 1 and 'value quote"d is not a number' in result.errors[0]
    assert ("partition_count", None, None) in values(result)


def test_reconnects_after_the_target_restarts(start_jmx_double) -> None:  # type: ignore[no-untyped-def]
    double = start_jmx_double()
    backend = JpypeBackend(JmxEndpoint("127.0.0.1", double.port, 10))
    leader_count = [d for d in metrics_for("broker") if d.metric == "leader_count"]
    try:
        double.set("leader_count", 5)
        assert [r.value for r in backend.read(leader_count).readings] == [5.0]
        double.restart()  # same port, new JVM: the kept connection is dead
        double.set("leader_count", 6)
        after_restart = backend.read([*leader_count, broken_definition("kafka.server:type=ReplicaManager,name=")])
        assert [r.value for r in after_restart.readings] == [6.0]
        assert len(after_restart.errors) == 1 and "bad ObjectName" in after_restart.errors[0]
        double.stop()
        down = scrape(backend="jpype", port=double.port)
        assert not down.ok
        double.start()
        double.set("leader_count", 7)
        assert [r.value for r in backend.read(leader_count).readings] == [7.0]
    finally:
        backend.close()


def test_credentials_are_used_and_wrong_ones_fail_the_scrape(start_jmx_double, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    secured = start_jmx_double(username="monitor", password="pw-1")
    monkeypatch.setenv("LAGWATCH_TEST_JMX_PW", "pw-1")
    good = scrape(backend="jpype", port=secured.port, username="monitor", password_env="LAGWATCH_TEST_JMX_PW")
    assert good.ok and good.samples
    monkeypatch.setenv("LAGWATCH_TEST_JMX_PW", "wrong")
    bad = scrape(backend="jpype", port=secured.port, username="monitor", password_env="LAGWATCH_TEST_JMX_PW")
    assert not bad.ok
    assert "authentication failed" in bad.errors[0].lower()


def _live_tracebacks() -> int:
    gc.collect()
    return sum(1 for o in gc.get_objects() if type(o).__name__ == "traceback")


def test_a_missing_mbean_read_every_cycle_leaves_nothing_behind(jmx_double: JmxDouble) -> None:
    """jpype keeps every caught Java exception's traceback alive for good (≈ 4.8 KB a raise, not
    collectable), so asking getAttribute for an absent MBean every cycle grew the collector
    without bound: after the first InstanceNotFound the name is asked with queryNames instead."""
    missing = broken_definition("kafka.server:type=LagwatchTest,name=NeverRegistered", metric="partition_count")
    present = [d for d in metrics_for("broker") if d.metric == "leader_count"]
    jmx_double.set("leader_count", 3)
    backend = JpypeBackend(JmxEndpoint("127.0.0.1", jmx_double.port, 10))
    try:
        first = backend.read([*present, missing])
        before = _live_tracebacks()
        for _ in range(200):
            result = backend.read([*present, missing])
            assert [r.value for r in result.readings] == [3.0]
            assert result.errors == [f"{missing.query()}: no such MBean or attribute"]
        assert first.errors == result.errors
        assert _live_tracebacks() - before < 10  # was 2 per read: 400
    finally:
        backend.close()
