"""`lagwatch collect` fails clearly when Kafka cannot be reached (exit 3, servers named)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from lagwatch.broker import free_port


def test_unreachable_bootstrap_servers_exit_3_naming_them(tmp_path: Path) -> None:
    servers = f"127.0.0.1:{free_port()}"  # nothing listens there
    config = tmp_path / "c.toml"
    config.write_text(f'[cluster]\nbootstrap_servers = "{servers}"\n[collect]\ninterval_s = 2\ntimeout_s = 1\n')
    proc = subprocess.run(
        [sys.executable, "-m", "lagwatch.cli", "--config", str(config), "collect", "--once"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 3, proc.stderr
    assert servers in proc.stderr
    assert "did not answer" in proc.stderr
    assert "Traceback" not in proc.stderr
