"""`lagwatch up` leaves nothing behind: not after Ctrl-C, not after a SIGKILL of the supervisor.

The processes of a run are found by walking /proc for the run's environment marker, whoever
their parent is by then. The bounds only catch a hang; the stop time is measured in
bench/bench_stack.py against its 10 s bar.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from harness import lake_rows
from harness.local_stack import LocalStack
from harness.processes import run_lagwatch
from lagwatch import exit_codes
from lagwatch.config import parse_config
from lagwatch.kafka import use_embedded_broker
from lagwatch.vocabulary import GROUPS_NOT_VISIBLE_METRIC
from shell import processes, stack

#: Generous: a stop that takes this long is a hang, not a slow stop.
HANG_S = 30


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGKILL], ids=["ctrl-c", "supervisor-killed"])
def test_nothing_is_left_after_the_stop(tmp_path: Path, signum: signal.Signals) -> None:
    stack = LocalStack(tmp_path)
    process = stack.start()
    try:
        stack.wait_up()
        started = stack.processes()
        assert len(started) >= 8, "broker, demo, collectors, Spark driver + JVM, dashboard, Streamlit, alerts"
        process.send_signal(signum)
        code = process.wait(HANG_S)
        stack.wait_gone(HANG_S)
    finally:
        stack.kill_everything()
        process.wait()
    assert code == (exit_codes.OK if signum == signal.SIGINT else -signal.SIGKILL)
    if signum == signal.SIGINT:
        log = stack.log.read_text()
        assert "stopping: every component at once" in log and "broker tansu on port" in log


#: Small, so a stopped job shows soon; above a demo collector cycle (15 s) plus a loaded batch.
READY_MAX_AGE_S = 45
#: The /readyz snapshot is at most cache_s old; the polls are a second apart.
POLL_SLACK_S = 1 + 1 + 2


def _readyz(url: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(f"{url}/readyz", timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def _poll_readyz(url: str, want: int, within_s: float) -> tuple[float, dict]:
    """Seconds until /readyz answers `want` (polled every second), and that answer's body."""
    started = time.monotonic()
    while True:
        code, body = _readyz(url)
        if code == want:
            return time.monotonic() - started, body
        assert time.monotonic() - started < within_s, f"/readyz still {code} after {within_s:.0f} s: {body}"
        time.sleep(1)


def _priorities(local: LocalStack) -> dict[str, int]:
    """Each component's nice value, minus the test's own."""
    own = os.getpriority(os.PRIO_PROCESS, 0)
    return {name: os.getpriority(os.PRIO_PROCESS, pid) - own for name, pid in local.pids().items()}


@pytest.mark.slow
def test_readyz_is_ready_on_the_demo_and_503_once_the_spark_job_stops_writing(tmp_path: Path) -> None:
    """Issue 27: /readyz said 503 minutes after `lagwatch up` while the dashboard showed fresh data.
    The Spark job is frozen (SIGSTOP, it and its JVM and workers): alive, as the supervisor sees
    it, but writing nothing, the hang readiness is there to catch."""
    local = LocalStack(tmp_path, api_settings={"ready_max_age_s": READY_MAX_AGE_S, "cache_s": 1})
    process = local.start()
    frozen: list[processes.Proc] = []
    try:
        local.wait_up()
        waited, body = _poll_readyz(local.api_url, 200, within_s=60)
        assert body["lake"]["age_s"] <= READY_MAX_AGE_S and body["error"] is None
        priorities = _priorities(local)
        assert priorities.pop("dashboard") == stack.DASHBOARD_NICE > 0, "a page yields to the pipeline"
        assert set(priorities) >= {"collectors", "spark job", "api + alerts"} and set(priorities.values()) == {0}
        spark = local.pids()["spark job"]
        frozen = [processes.Proc(spark, 0, 0), *processes.descendants(spark)]
        for proc in frozen:
            os.kill(proc.pid, signal.SIGSTOP)
        took, body = _poll_readyz(local.api_url, 503, within_s=READY_MAX_AGE_S + POLL_SLACK_S)
        assert body["lake"]["age_s"] > READY_MAX_AGE_S and body["error"] is None, body
        assert _readyz(local.api_url)[0] == 503, "stays unready while the job writes nothing"
    finally:
        for proc in frozen:
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGCONT)
        process.send_signal(signal.SIGINT)
        try:
            process.wait(HANG_S)
        finally:
            local.kill_everything()
            process.wait()
    print(f"ready {waited:.1f} s after up; 503 {took:.1f} s after the job froze")


def test_status_shows_the_groups_not_visible_per_cluster_from_the_newest_minute(tmp_path: Path) -> None:
    """`lagwatch status` beside collector health: the newest consumer_groups_not_visible per cluster."""
    lake = tmp_path / "lake"
    config = parse_config({"lake": {"path": str(lake), "duckdb_path": str(tmp_path / "views.duckdb")}}, environ={})
    lake_rows.metric(lake, 1_700_000_000, GROUPS_NOT_VISIBLE_METRIC, 3, cluster="prod", source="admin")
    lake_rows.metric(lake, 1_700_000_060, GROUPS_NOT_VISIBLE_METRIC, 2, cluster="prod", source="admin")
    lake_rows.metric(lake, 1_700_000_000, GROUPS_NOT_VISIBLE_METRIC, 0, cluster="dev", source="admin")
    assert stack._groups_not_visible_line(config) == f"{'groups not visible':<20} dev 0, prod 2"


def test_status_shows_the_commit_log_records_skipped_per_type(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    config = parse_config({"lake": {"path": str(lake), "duckdb_path": str(tmp_path / "views.duckdb")}}, environ={})
    skipped = "commit_log_records_skipped_total"
    lake_rows.metric(lake, 1_700_000_000, skipped, 5, source="commitlog", kind="counter")
    lake_rows.metric(lake, 1_700_000_000, skipped, 5, source="commitlog", kind="counter", client_id="ShareGroup")
    assert stack._commit_log_skipped_line(config) == f"{'commit log':<20} 5 records skipped (ShareGroup 5)"


@pytest.mark.parametrize(
    ("section", "variable"),
    [
        ('[api]\nauth = "token"\n', "LAGWATCH_API_TOKEN"),
        (
            '[dashboard]\nauth = "oidc"\noidc_client_id = "c"\n'
            'oidc_server_metadata_url = "http://127.0.0.1:9/.well-known/openid-configuration"\n',
            "LAGWATCH_DASHBOARD_OIDC_CLIENT_SECRET",
        ),
    ],
    ids=["api-token", "dashboard-oidc"],
)
def test_up_refuses_before_starting_anything_when_a_server_secret_is_unset(
    tmp_path: Path, section: str, variable: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("LAGWATCH_API_TOKEN", "LAGWATCH_DASHBOARD_OIDC_CLIENT_SECRET", "LAGWATCH_DASHBOARD_COOKIE_SECRET"):
        monkeypatch.delenv(name, raising=False)
    config = tmp_path / "config.toml"
    config.write_text(section)
    done = run_lagwatch(config, "up", timeout_s=60)
    assert done.returncode == exit_codes.BAD_INPUT, done.stdout + done.stderr
    assert variable in done.stderr
    assert "broker" not in done.stdout and not (tmp_path / "state" / "logs").exists(), "something was started"


@pytest.mark.parametrize("no_demo", [False, True], ids=["no-flag", "no-demo"])
def test_up_runs_no_demo_on_a_configured_cluster_flag_or_not(no_demo: bool, caplog: pytest.LogCaptureFixture) -> None:
    """A configured cluster is watched, never written to: the demo is for the embedded broker."""
    for configured in (
        parse_config({"cluster": {"name": "prod", "bootstrap_servers": "kafka1:9092"}}, environ={}),
        parse_config({"clusters": [{"name": "prod", "bootstrap_servers": "kafka1:9092"}]}, environ={}),
    ):
        with caplog.at_level(logging.INFO, logger="shell.stack"):
            assert stack._with_demo(configured, no_demo) is False
        assert "no demo: cluster prod is a configured cluster, which Lagwatch only watches" in caplog.text
    embedded = parse_config({}, environ={})
    assert stack._with_demo(embedded, no_demo) is not no_demo
    use_embedded_broker(embedded, "127.0.0.1:20123")  # what `up` does once its tansu answers
    assert stack._with_demo(embedded, no_demo) is not no_demo
