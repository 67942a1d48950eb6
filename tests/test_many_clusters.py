"""One Lagwatch for two real Kafka clusters: `[[clusters]]` end to end.

Two independent one-node clusters (the session broker, "home", which also carries the samples,
and a second one, on the oldest supported Kafka line when `KAFKA_HOME_COMPAT` is set). The same
group and topic names on both, with different offsets, so a sample stamped with the wrong
cluster cannot pass. One `lagwatch collect` reads both; the samples are read back from the
samples topic. A cluster that stops mid-run is down (its targets up = 0) and costs the other
cluster nothing: its cycles stay on time and complete.
"""

from __future__ import annotations

import datetime as dt
import itertools
import re
import signal
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness.kafka_workload import KafkaWorkload
from harness.polling import wait_until
from harness.processes import run_lagwatch, start_lagwatch
from harness.real_kafka import RealKafkaBroker, second_kafka_home
from harness.samples_topic import read_samples
from harness.two_clusters import Cluster, many_clusters_config
from lagwatch import lake as lakelib
from shell.broker import free_port
from tests.api.conftest import RunningApi, lag_row, stop_process, wait_answering, write_lake

pytestmark = pytest.mark.slow

#: Per cluster: records produced per partition, and the group's committed offsets.
WORKLOADS = {
    "home": ({0: 10, 1: 20, 2: 5}, {0: 4, 1: 20, 2: 0}),
    "second": ({0: 7, 1: 3, 2: 30}, {0: 2, 1: 1, 2: 30}),
    "doomed": ({0: 7, 1: 3, 2: 30}, {0: 2, 1: 1, 2: 30}),
}


def expected_lag(cluster: str) -> dict[int, float]:
    produced, committed = WORKLOADS[cluster]
    return {p: float(produced[p] - committed[p]) for p in produced}


def lagging_group(cluster: Cluster, topic: str, group: str) -> None:
    produced, committed = WORKLOADS[cluster.name]
    workload = KafkaWorkload(cluster.broker.bootstrap_servers)
    workload.create_topic(topic, len(produced))
    workload.produce(topic, produced)
    workload.commit(group, topic, committed)


def sections(tmp_path: Path, samples_topic: str, topic: str, group: str, **collect: Any) -> dict[str, dict[str, Any]]:
    return {
        "transport": {"samples_topic": samples_topic},
        "collect": {"coordinate": False, "groups_allow": [f"^{group}$"], "topics_allow": [f"^{topic}$"], **collect},
        "lake": {"path": str(tmp_path / "lake"), "duckdb_path": str(tmp_path / "lagwatch.duckdb")},
    }


def lags_by_cluster(samples: list[dict[str, Any]], group: str) -> dict[str, dict[int, float]]:
    found: dict[str, dict[int, float]] = defaultdict(dict)
    for s in samples:
        if s["metric"] == "consumer_lag" and s["group_id"] == group:
            found[s["cluster"]][s["partition"]] = s["value"]
    return dict(found)


def up_by_target(samples: list[dict[str, Any]]) -> dict[tuple[str, str], float]:
    """(cluster, "admin" or "broker-<id>") -> the `up` value (one cycle's samples)."""
    return {
        (s["cluster"], f"broker-{s['broker']}" if s["broker"] else s["source"]): s["value"]
        for s in samples
        if s["metric"] == "up"
    }


def test_one_collect_reads_both_clusters_each_under_its_own_name(
    two_clusters: tuple[Cluster, Cluster], tmp_path: Path, unique: Callable[[str], str]
) -> None:
    home, second = two_clusters
    topic, group, samples_topic = unique("orders"), unique("billing"), unique("samples")
    for cluster in two_clusters:
        lagging_group(cluster, topic, group)
    config = many_clusters_config(
        tmp_path / "config.toml", [home, second], sections(tmp_path, samples_topic, topic, group, timeout_s=10)
    )

    proc = run_lagwatch(config, "collect", "--once")

    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("collect: targets ok 2, failed 0,"), proc.stdout
    samples = read_samples(home.broker.bootstrap_servers, samples_topic, expect_at_least=20)
    assert lags_by_cluster(samples, group) == {"home": expected_lag("home"), "second": expected_lag("second")}
    assert up_by_target(samples) == {("home", "admin"): 1.0, ("second", "admin"): 1.0}
    ends = {(s["cluster"], s["partition"]): s["value"] for s in samples if s["metric"] == "log_end_offset"}
    assert ends == {(c, p): float(n) for c in ("home", "second") for p, n in WORKLOADS[c][0].items()}


def test_the_api_lists_every_configured_cluster_with_its_own_servers(
    two_clusters: tuple[Cluster, Cluster], tmp_path: Path
) -> None:
    """Burrow lists its configured clusters; so does the API, even one the lake has no row of yet
    (here "second"), and a cluster only the lake still knows ("retired") is listed without servers."""
    home, second = two_clusters
    lake = tmp_path / "lake"
    now = lakelib.utc_now().replace(second=0, microsecond=0)
    write_lake(lake, {"lag_1m": [{**lag_row(now, "g", "t", 0, 5, 1), "cluster": c} for c in ("home", "retired")]})
    port = free_port()
    config = many_clusters_config(
        tmp_path / "config.toml",
        [home, second],
        {
            "lake": {"path": str(lake), "duckdb_path": str(tmp_path / "lagwatch.duckdb")},
            "api": {"port": port, "cache_s": 1},
        },
    )
    api = RunningApi(
        f"http://127.0.0.1:{port}", start_lagwatch(config, tmp_path / "api.log", "api"), tmp_path / "api.log"
    )
    try:
        wait_answering(api)
        assert api.json("/v3/kafka")[1]["clusters"] == ["home", "retired", "second"]
        for cluster in two_clusters:
            code, body = api.json(f"/v3/kafka/{cluster.name}")
            assert code == 200 and body["module"]["servers"] == [cluster.broker.bootstrap_servers], body
        assert api.json("/v3/kafka/retired")[1]["module"]["servers"] == []
        metrics = api.get("/metrics")[2].decode()
        assert re.search(r'^kafka_consumergroup_group_lag\{cluster_name="home",group="g",', metrics, re.M), metrics
        assert re.search(r'^kafka_consumergroup_group_lag\{cluster_name="retired",group="g",', metrics, re.M)
    finally:
        api.stop()


def test_an_unreachable_cluster_at_start_is_logged_and_the_others_are_collected(
    broker: RealKafkaBroker, tmp_path: Path, unique: Callable[[str], str]
) -> None:
    home = Cluster("home", broker)
    topic, group, samples_topic = unique("orders"), unique("billing"), unique("samples")
    lagging_group(home, topic, group)
    nowhere = f"127.0.0.1:{free_port()}"  # nothing listens there
    config = many_clusters_config(
        tmp_path / "config.toml", [home], sections(tmp_path, samples_topic, topic, group, interval_s=2, timeout_s=1)
    )
    config.write_text(config.read_text() + f'[[clusters]]\nname = "gone"\nbootstrap_servers = "{nowhere}"\n')

    proc = run_lagwatch(config, "collect", "--once")

    assert proc.returncode == 0, proc.stderr
    assert re.search(rf"ERROR .*cluster 'gone': Kafka at '{re.escape(nowhere)}' did not answer", proc.stderr)
    assert "collect: targets ok 1, failed 1 (admin@gone)," in proc.stdout
    samples = read_samples(broker.bootstrap_servers, samples_topic, expect_at_least=10)
    assert lags_by_cluster(samples, group) == {"home": expected_lag("home")}
    assert up_by_target(samples) == {("home", "admin"): 1.0, ("gone", "admin"): 0.0}


def up_row(cluster: str, at: Any, source: str, value: float, broker: str | None = None) -> dict[str, Any]:
    """A metrics_1m row of a target's `up`, as the Spark job rolls it up."""
    stats = {"samples": 4, "min": value, "max": value, "avg": value, "first": value, "last": value}
    return {"cluster": cluster, "window_start": at, "window_end": at + dt.timedelta(minutes=1), "source": source,
            "metric": "up", "kind": "gauge", "broker": broker, **stats, "rate_per_s": None, "version": 1}  # fmt: skip


def test_status_shows_every_cluster_answering_or_not_with_its_targets(broker: RealKafkaBroker, tmp_path: Path) -> None:
    nowhere = f"127.0.0.1:{free_port()}"
    lake = tmp_path / "lake"
    now = lakelib.utc_now().replace(second=0, microsecond=0)
    write_lake(lake, {"metrics_1m": [
        up_row("home", now, "admin", 1.0), up_row("home", now, "jmx", 0.0, broker="2"),
        up_row("gone", now - dt.timedelta(minutes=1), "admin", 1.0), up_row("gone", now, "admin", 0.0),
    ]})  # fmt: skip
    config = many_clusters_config(
        tmp_path / "config.toml",
        [Cluster("home", broker)],
        {"lake": {"path": str(lake), "duckdb_path": str(tmp_path / "lagwatch.duckdb")}},
    )
    config.write_text(config.read_text() + f'[[clusters]]\nname = "gone"\nbootstrap_servers = "{nowhere}"\n')

    proc = run_lagwatch(config, "status")

    lines = {line.split()[1]: line for line in proc.stdout.splitlines() if line.startswith("cluster ")}
    assert set(lines) == {"home", "gone"}, proc.stdout
    assert broker.bootstrap_servers in lines["home"] and "answering; targets up 1, down 1 (broker-2)" in lines["home"]
    assert nowhere in lines["gone"] and "NOT ANSWERING; targets up 0, down 1 (admin)" in lines["gone"]
    assert "not running" in proc.stdout and proc.returncode == 1, "no stack was started"


INTERVAL_S, TIMEOUT_S = 4.0, 3.0
_CYCLE_LINE = re.compile(r"cycle: targets ok (\d+), failed (\d+).* in ([\d.]+) s")
_PER_CLUSTER_ENTRY = re.compile(r"(\w+) done in ([\d.]+) s(?:, failed (\d+))?")


def _cycle_lines(log: Path) -> list[tuple[str, str]]:
    """(summary line, per-cluster line) of every finished cycle, oldest first."""
    lines = log.read_text(errors="replace").splitlines()
    return [(a, b) for a, b in itertools.pairwise(lines) if _CYCLE_LINE.search(a) and "per cluster" in b]


def test_a_cluster_that_stops_costs_the_other_nothing(
    broker: RealKafkaBroker, tmp_path: Path, unique: Callable[[str], str]
) -> None:
    topic, group, samples_topic = unique("orders"), unique("billing"), unique("samples")
    with RealKafkaBroker(work_dir=tmp_path / "doomed-kafka", home=second_kafka_home()) as doomed_broker:
        home, doomed = Cluster("home", broker), Cluster("doomed", doomed_broker)
        for cluster in (home, doomed):
            lagging_group(cluster, topic, group)
        config = many_clusters_config(
            tmp_path / "config.toml",
            [home, doomed],
            sections(tmp_path, samples_topic, topic, group, interval_s=INTERVAL_S, timeout_s=TIMEOUT_S),
            jmx=True,
        )
        log = tmp_path / "collect.log"
        collect = start_lagwatch(config, log, "collect")
        try:
            wait_until(lambda: len(_cycle_lines(log)) >= 2, 120, f"two cycles of both clusters ({log})")
            assert "failed 0" in _cycle_lines(log)[-1][0], log.read_text()[-3000:]
            seen_before = len(_cycle_lines(log))
            doomed_broker.stop()
            stopped_ms = time.time() * 1000
            wait_until(lambda: len(_cycle_lines(log)) >= seen_before + 4, 60, "four cycles after the stop")
        finally:
            collect.send_signal(signal.SIGTERM)
            stop_process(collect)
    text = log.read_text(errors="replace")
    assert "Traceback" not in text, text[-3000:]

    after = _cycle_lines(log)[seen_before + 1 :]  # the first cycle may have begun before the stop
    for summary, per_cluster in after:
        ok, failed, duration = _CYCLE_LINE.search(summary).groups()  # type: ignore[union-attr]
        clusters = {name: (float(s), failed) for name, s, failed in _PER_CLUSTER_ENTRY.findall(per_cluster)}
        assert (ok, failed) == ("2", "2"), summary
        assert clusters["home"][1] == "" and clusters["doomed"][1] == "2", per_cluster
        # The down cluster costs its own timeout once (not admin then JMX in turn), and the home
        # cluster's samples were published before it was over.
        assert float(duration) <= TIMEOUT_S + 1.0, summary
        assert clusters["home"][0] < clusters["doomed"][0], per_cluster

    samples = read_samples(broker.bootstrap_servers, samples_topic, expect_at_least=50)
    cycles: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for s in samples:
        if s["collector"] and s["source"] != "commitlog":
            cycles[s["ts"]].append(s)
    late = sorted(ts for ts in cycles if ts > stopped_ms + INTERVAL_S * 1000)
    assert len(late) >= 2, f"cycles after the stop: {late}"
    for ts in late:
        cycle = cycles[ts]
        assert up_by_target(cycle) == {
            ("home", "admin"): 1.0,
            ("home", "broker-1"): 1.0,
            ("doomed", "admin"): 0.0,
            ("doomed", "broker-1"): 0.0,
        }, ts
        assert lags_by_cluster(cycle, group) == {"home": expected_lag("home")}, ts
        home_metrics = {s["metric"] for s in cycle if s["cluster"] == "home" and s["source"] == "jmx"}
        assert len(home_metrics) > 10, f"home broker JMX metrics in cycle {ts}: {sorted(home_metrics)}"
        doomed_durations = [
            s["value"] for s in cycle if s["cluster"] == "doomed" and s["metric"] == "scrape_duration_seconds"
        ]
        assert max(doomed_durations) <= TIMEOUT_S + 0.5, doomed_durations
    gaps = [(b - a) / 1000 for a, b in itertools.pairwise(late)]
    assert all(abs(gap - INTERVAL_S) < 1.0 for gap in gaps), f"cycles not on time after the stop: {gaps}"
