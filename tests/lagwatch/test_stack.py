"""`lagwatch up` leaves nothing behind: not after Ctrl-C, not after a SIGKILL of the supervisor.

The processes of a run are found by walking /proc for the run's environment marker, whoever
their parent is by then. The bounds only catch a hang; the stop time is measured in
bench/bench_stack.py against its 10 s bar.
"""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from lagwatch import exit_codes, stack
from lagwatch.config import parse_config
from lagwatch.vocabulary import GROUPS_NOT_VISIBLE_METRIC
from tests.fixtures import lake_rows
from tests.fixtures.local_stack import LocalStack
from tests.fixtures.processes import run_lagwatch

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
