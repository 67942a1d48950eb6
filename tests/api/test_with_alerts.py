"""`lagwatch api --with-alerts` (what `lagwatch up` runs): the API serves while the alert engine
evaluates on a thread of the same process, and SIGTERM stops both cleanly."""

from __future__ import annotations

import time
from pathlib import Path

from harness.processes import start_lagwatch
from lagwatch import exit_codes
from shell.broker import free_port
from tests.api.conftest import KnownLake, RunningApi, wait_answering, write_config

ENGINE_LINE = "alerts: leader:"


def test_api_with_alerts_serves_evaluates_and_stops_cleanly(known_lake: KnownLake, tmp_path: Path) -> None:
    port = free_port()
    config = write_config(tmp_path, known_lake.root, port)
    alerts = f'leadership = "none"\nevaluate_every_s = 1\nstate_dir = "{tmp_path / "alerts"}"\n'
    config.write_text(config.read_text() + f"\n[alerts]\n{alerts}")
    log = tmp_path / "api.log"
    api = RunningApi(f"http://127.0.0.1:{port}", start_lagwatch(config, log, "api", "--with-alerts"), log)
    try:
        wait_answering(api)
        deadline = time.monotonic() + 60
        while log.read_text().count(ENGINE_LINE) < 2:  # the engine evaluates, cycle after cycle
            assert api.process.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.2)
        code, ready = api.json("/readyz")
        assert code in (200, 503) and "lake" in ready, ready  # the server answers while the engine runs
    finally:
        api.process.terminate()
        returncode = api.process.wait(30)
    assert returncode == exit_codes.OK, log.read_text()[-3000:]
    assert (tmp_path / "alerts").is_dir()  # the engine's own state, closed by engine.stop()
