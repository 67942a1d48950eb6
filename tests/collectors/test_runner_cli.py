"""`lagwatch collect` fails clearly when Kafka cannot be reached (exit 3, servers named), and
`collect --once` prints the line the README documents."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from harness.processes import run_lagwatch
from shell.broker import free_port

REPO = Path(__file__).resolve().parents[2]


def test_unreachable_bootstrap_servers_exit_3_naming_them(tmp_path: Path) -> None:
    servers = f"127.0.0.1:{free_port()}"  # nothing listens there
    config = tmp_path / "c.toml"
    config.write_text(f'[cluster]\nbootstrap_servers = "{servers}"\n[collect]\ninterval_s = 2\ntimeout_s = 1\n')
    proc = subprocess.run(
        [sys.executable, "-m", "shell.cli", "--config", str(config), "collect", "--once"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 3, proc.stderr
    assert servers in proc.stderr
    assert "did not answer" in proc.stderr
    assert "Traceback" not in proc.stderr


def _readme_once_line() -> re.Pattern[str]:
    """The line the README promises for `collect --once`, as a pattern (N, M, K, S, U are numbers)."""
    readme = (REPO / "README.md").read_text()
    template = re.search(r"print one line `(collect: [^`]+)`", readme)
    assert template, "the README documents the --once line"
    text = template.group(1).replace(" (names of the failed)", "\0")
    pattern = re.escape(text).replace("\0", r"(?: \([^)]*\))?")
    for name, value in (("N", r"(\d+)"), ("M", r"(\d+)"), ("K", r"(\d+)"), ("S", r"[\d.]+"), ("U", r"(\d+)")):
        pattern = re.sub(rf"\b{name}\b", lambda _, v=value: v, pattern, count=1)
    return re.compile(f"^{pattern}$")


def test_collect_once_prints_the_line_the_readme_promises(broker, tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text(
        f'[cluster]\nbootstrap_servers = "{broker.bootstrap_servers}"\n'
        f'[transport]\nsamples_topic = "once-{tmp_path.name}"\n[collect]\ninterval_s = 5\ntimeout_s = 4\n'
    )
    proc = run_lagwatch(config, "collect", "--once")
    assert proc.returncode == 0, proc.stderr
    [line] = proc.stdout.splitlines()
    match = _readme_once_line().match(line)
    assert match, f"{line!r} is not the README's line"
    ok, failed, published, undelivered = (int(g) for g in match.groups())
    assert (ok, failed, undelivered) == (1, 0, 0), "the admin collector is the one target"
    assert published > 0
