"""A served dashboard and a headless chromium for benches, outside pytest.

Why here: tests/dashboard has the same two pieces as fixtures, but a bench may not import
`tests`; these are the plain context managers, started as an operator starts them (the
`lagwatch dashboard` CLI as its own process on the configured port, the Debian chromium
driven by playwright).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from harness.processes import start_lagwatch

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
READY_TIMEOUT_S = 90.0


def healthy(url: str) -> bool:
    """Whether Streamlit answers its health endpoint (the server is up, the app may not have run yet)."""
    try:
        with urllib.request.urlopen(f"{url}/_stcore/health", timeout=1) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def _stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the dashboard's own process group (as `lagwatch up` stops it), SIGKILL if it lingers."""
    if process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)


@contextlib.contextmanager
def serving_dashboard(config: Path, port: int, log: Path) -> Iterator[str]:
    """`lagwatch dashboard` over `config` (which must set [dashboard] port = `port`) until the
    block ends; yields its URL once /_stcore/health answers."""
    process = start_lagwatch(config, log, "dashboard")
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while not healthy(url):
            if process.poll() is not None:
                raise RuntimeError(f"lagwatch dashboard exited ({process.returncode}): {log.read_text()[-2000:]}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"lagwatch dashboard did not answer /_stcore/health in {READY_TIMEOUT_S:.0f} s")
            time.sleep(0.25)
        yield url
    finally:
        _stop(process)


@contextlib.contextmanager
def chromium() -> Iterator[Any]:
    """A headless chromium (the Debian package) driven by playwright; closed when the block ends."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()
