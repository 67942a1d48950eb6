"""A real Prometheus scrapes `lagwatch api` over a lake the real pipeline built from a real workload.

Workload on the real broker: a topic, a group committing behind the producer; the admin
collector samples it over three cycles, the Spark job rolls the samples into the lake. Then
Debian's Prometheus (on loopback, 1 s scrapes, the shipped scrape config and rules) must
return the lake's lag and time lag through PromQL, every query of the shipped Grafana
dashboard must return data, and every shipped rule must evaluate without error.
"""

from __future__ import annotations

import argparse
import json
import re
import secrets
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from collectors import runner
from harness.kafka_workload import KafkaWorkload
from lagwatch import lake as lakelib
from lagwatch.config import API_TOKEN_ENV
from shell.broker import free_port
from spark_jobs import job
from tests.api.conftest import CLUSTER, KnownLake, RunningApi, stop_process

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
PROMETHEUS = "/usr/bin/prometheus"
PROMTOOL = "/usr/bin/promtool"
#: Alert rules in the shipped rules file (every one must be evaluated); those commented out are off.
SHIPPED_RULES = sum(
    line.lstrip().startswith("- alert:")
    for line in (DEPLOY / "prometheus" / "lagwatch-rules.yml").read_text().splitlines()
)


@pytest.fixture
def workload_lake(
    kafka: KafkaWorkload, make_config: Callable[..., Any], spark: Any, unique: Callable[[str], str]
) -> tuple[Path, str]:
    """Lake built by the real collector and Spark job from a group lagging on the real broker."""
    topic, group = unique("orders"), unique("billing")
    config = make_config(
        cluster={"name": CLUSTER},
        collect={"groups_allow": [f"^{group}$"], "topics_allow": [f"^{topic}$"], "coordinate": False},
    )
    kafka.create_topic(topic, 2)
    steps = [({0: 40, 1: 40}, {0: 40, 1: 40}), ({0: 60, 1: 20}, {0: 50, 1: 60}), ({0: 30, 1: 5}, {0: 55, 1: 60})]
    for produce, commit in steps:  # lag opens on partition 0 while the producer keeps going
        kafka.produce(topic, produce)
        kafka.commit(group, topic, commit)
        assert runner.run(config, argparse.Namespace(once=True)) == 0
        time.sleep(1.1)
    assert job.run(config, argparse.Namespace(available_now=True)) == 0
    return config.resolve_path(config.lake.path), group


def _lake_partitions(lake: Path, group: str) -> dict[tuple[str, str], tuple[int, float | None]]:
    con = lakelib.connect_readonly(lake, lake.parent / "truth.duckdb")
    try:
        rows = con.execute(
            "SELECT topic, partition, lag, time_lag_s FROM lag_1m WHERE group_id = ? "
            "QUALIFY row_number() OVER (PARTITION BY topic, partition ORDER BY window_start DESC) = 1",
            [group],
        ).fetchall()
    finally:
        con.close()
    return {(t, str(p)): (lag, time_lag) for t, p, lag, time_lag in rows}


#: The shipped scrape config's commented-out bearer-token lines, switched on by `Prometheus(token_file=…)`.
SHIPPED_AUTHORIZATION = "    # authorization:\n    #   credentials_file: /etc/prometheus/lagwatch-api-token\n"


def _with_token_file(config: str, token_file: Path) -> str:
    """The shipped config with its authorization lines on, plus a job scraping the same target without them."""
    assert SHIPPED_AUTHORIZATION in config, "deploy/prometheus/prometheus.yml lost its authorization example"
    config = config.replace(SHIPPED_AUTHORIZATION, f"    authorization:\n      credentials_file: {token_file}\n")
    job = config[config.index("  - job_name: lagwatch") :]
    anonymous = re.sub(r"    authorization:\n      credentials_file: .*\n", "", job)
    return config + anonymous.replace("job_name: lagwatch", f"job_name: {ANONYMOUS_JOB}")


#: With a token file: a second job scraping the same target with no credentials (it must be refused).
ANONYMOUS_JOB = "lagwatch-anonymous"


class Prometheus:
    def __init__(self, folder: Path, target: str, token_file: Path | None = None) -> None:
        self.port = free_port()
        shutil.copy(DEPLOY / "prometheus" / "lagwatch-rules.yml", folder / "lagwatch-rules.yml")
        config = (DEPLOY / "prometheus" / "prometheus.yml").read_text()
        config = (
            config.replace("lagwatch:8000", target)
            .replace("15s", "1s")
            .replace("scrape_timeout: 10s", "scrape_timeout: 1s")
        )
        if token_file is not None:
            config = _with_token_file(config, token_file)
        (folder / "prometheus.yml").write_text(config)
        self.log = folder / "prometheus.log"
        with open(self.log, "wb") as out:
            self.process = subprocess.Popen(
                [
                    PROMETHEUS,
                    f"--config.file={folder / 'prometheus.yml'}",
                    f"--storage.tsdb.path={folder / 'data'}",
                    f"--web.listen-address=127.0.0.1:{self.port}",
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
            )

    def api(self, path: str, **params: str) -> Any:
        url = f"http://127.0.0.1:{self.port}{path}?{urllib.parse.urlencode(params)}"
        with urllib.request.urlopen(url, timeout=10) as response:
            body = json.loads(response.read())
        assert body["status"] == "success", body
        return body["data"]

    def query(self, expr: str) -> list[dict[str, Any]]:
        return self.api("/api/v1/query", query=expr)["result"]

    def wait(self, what: str, check: Callable[[], bool], timeout_s: float = 60) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"prometheus exited: {self.log.read_text()[-3000:]}")
            try:
                if check():
                    return
            except OSError:
                pass
            time.sleep(0.25)
        raise AssertionError(f"prometheus: {what} not within {timeout_s} s; log: {self.log.read_text()[-2000:]}")

    def stop(self) -> None:
        stop_process(self.process)


@pytest.fixture
def prometheus(tmp_path: Path) -> Iterator[Callable[..., Prometheus]]:
    started: list[Prometheus] = []

    def start(api: RunningApi, token_file: Path | None = None) -> Prometheus:
        folder = tmp_path / "prometheus"
        folder.mkdir()
        started.append(Prometheus(folder, api.url.removeprefix("http://"), token_file))
        return started[-1]

    yield start
    for p in started:
        p.stop()


def _dashboard_queries() -> list[tuple[str, str]]:
    dashboard = json.loads((DEPLOY / "grafana" / "lagwatch.json").read_text())
    queries = [(p["title"], t["expr"]) for p in dashboard["panels"] for t in p.get("targets", [])]
    for variable in dashboard["templating"]["list"]:
        if variable["type"] == "query":
            match = re.fullmatch(r"label_values\((.*), (\w+)\)", variable["query"]["query"])
            assert match, variable
            queries.append((f"variable {variable['name']}", f"count by ({match[2]}) ({match[1]})"))
    substitute = {"$cluster": CLUSTER, "$group": ".*", "${datasource}": ""}
    for name, value in substitute.items():
        queries = [(title, expr.replace(name, value)) for title, expr in queries]
    return queries


def test_promtool_accepts_the_shipped_rules_and_config() -> None:
    rules = subprocess.run(
        [PROMTOOL, "check", "rules", str(DEPLOY / "prometheus" / "lagwatch-rules.yml")], capture_output=True, text=True
    )
    assert rules.returncode == 0, rules.stdout + rules.stderr
    config = subprocess.run(
        [PROMTOOL, "check", "config", str(DEPLOY / "prometheus" / "prometheus.yml")], capture_output=True, text=True
    )
    assert config.returncode == 0, config.stdout + config.stderr


def test_prometheus_scrapes_the_lakes_lag_and_every_dashboard_query_and_rule_works(
    workload_lake: tuple[Path, str],
    start_api: Callable[..., RunningApi],
    prometheus: Callable[[RunningApi], Prometheus],
) -> None:
    lake, group = workload_lake
    truth = _lake_partitions(lake, group)
    assert truth and any(lag > 0 for lag, _ in truth.values()), "the workload left the group behind"
    assert any(t is not None and t > 0 for _, t in truth.values()), "time lag was interpolated somewhere"
    api = start_api(lake)
    prom = prometheus(api)
    prom.wait("scraped lagwatch", lambda: bool(prom.query(f'kafka_consumergroup_group_lag{{group="{group}"}}')))
    prom.wait("two scrapes for increase()", lambda: bool(prom.query("increase(lagwatch_dead_letters_total[5m])")))

    lag = {
        (r["metric"]["topic"], r["metric"]["partition"]): float(r["value"][1])
        for r in prom.query(f'kafka_consumergroup_group_lag{{group="{group}"}}')
    }
    assert lag == {k: float(v) for k, (v, _) in truth.items()}
    seconds = prom.query(f'kafka_consumergroup_group_lag_seconds{{group="{group}"}}')
    got = {(r["metric"]["topic"], r["metric"]["partition"]): float(r["value"][1]) for r in seconds}
    assert got == pytest.approx({k: t for k, (_, t) in truth.items() if t is not None})
    burrow = prom.query(f'burrow_kafka_consumer_lag_total{{consumer_group="{group}"}}')
    assert [float(r["value"][1]) for r in burrow] == [float(sum(v for v, _ in truth.values()))]

    has_retention = bool(prom.query('{__name__=~"lagwatch_consumergroup_retention_margin_.*"}'))
    for title, expr in _dashboard_queries():
        result = prom.query(expr)  # a PromQL error fails inside query()
        if "retention_margin" in expr and not has_retention:
            continue  # evaluated without error; the lake has no retention_margin columns yet (docs/api.md)
        assert result, f"dashboard panel {title!r} got no data from {expr}"

    def rules_evaluated() -> bool:
        rules = [r for g in prom.api("/api/v1/rules")["groups"] for r in g["rules"]]
        return len(rules) == SHIPPED_RULES and all(r["lastEvaluation"] > "2000" for r in rules)

    prom.wait("every rule evaluated", rules_evaluated)
    for rule_group in prom.api("/api/v1/rules")["groups"]:
        for rule in rule_group["rules"]:
            assert rule["health"] == "ok", (rule["name"], rule.get("lastError"))


def test_prometheus_scrapes_with_the_bearer_token_and_without_it_is_refused(
    known_lake: KnownLake,
    start_api: Callable[..., RunningApi],
    prometheus: Callable[..., Prometheus],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The shipped scrape config's `authorization: credentials_file` lines, switched on, get the
    series from an API with auth = "token"; the same target scraped without them is down."""
    token = secrets.token_urlsafe(24)
    monkeypatch.setenv(API_TOKEN_ENV, token)
    token_file = tmp_path / "lagwatch-api-token"
    token_file.write_text(token + "\n")  # Prometheus trims the trailing newline, as editors leave one
    api = start_api(known_lake.root, auth="token")
    prom = prometheus(api, token_file)

    def up(job: str) -> list[float]:
        return [float(r["value"][1]) for r in prom.query(f'up{{job="{job}"}}')]

    prom.wait("both jobs scraped", lambda: len(up("lagwatch")) == 1 and len(up(ANONYMOUS_JOB)) == 1)
    assert up("lagwatch") == [1.0]
    assert up(ANONYMOUS_JOB) == [0.0]
    lag = {(r["metric"]["group"], r["metric"]["topic"], int(r["metric"]["partition"])): float(r["value"][1])
           for r in prom.query('kafka_consumergroup_group_lag{job="lagwatch"}')}  # fmt: skip
    assert lag == {key: float(row["lag"]) for key, row in known_lake.newest_lag().items()}
    assert not prom.query(f'kafka_consumergroup_group_lag{{job="{ANONYMOUS_JOB}"}}')
