"""deploy/systemd/: systemd's own verifier accepts every unit (an unknown key or a bad value is
a warning it prints, so any output fails), and the units run what the CLI offers.

`systemd-analyze verify` needs each ExecStart binary to exist, so it reads copies whose
/opt/lagwatch/bin/lagwatch is this checkout's `lagwatch`; nothing else is changed.
"""

from __future__ import annotations

import argparse
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from shell.cli import build_parser
from shell.stack import DASHBOARD_NICE

UNITS = Path(__file__).resolve().parents[2] / "deploy" / "systemd"
INSTALLED = "/opt/lagwatch/bin/lagwatch"
SPLIT = ("lagwatch-collect", "lagwatch-stream", "lagwatch-api", "lagwatch-dashboard")


def unit_files() -> list[Path]:
    return sorted(p for p in UNITS.iterdir() if p.suffix in {".service", ".target"})


def key_values(unit: Path, key: str) -> list[str]:
    prefix = f"{key}="
    return [line.removeprefix(prefix) for line in unit.read_text().splitlines() if line.startswith(prefix)]


def test_systemd_analyze_verify_accepts_every_unit(tmp_path: Path) -> None:
    analyze = shutil.which("systemd-analyze")
    assert analyze is not None, "systemd-analyze is not installed: `make test-system-deps` installs it (systemd)"
    lagwatch = Path(sys.executable).parent / "lagwatch"
    for unit in unit_files():
        (tmp_path / unit.name).write_text(unit.read_text().replace(INSTALLED, str(lagwatch)))
    done = subprocess.run(
        [analyze, "verify", *sorted(str(p) for p in tmp_path.iterdir())], capture_output=True, text=True, check=False
    )
    assert (done.returncode, done.stdout + done.stderr) == (0, "")


def test_each_unit_runs_a_lagwatch_command_as_the_lagwatch_user_in_the_data_folder() -> None:
    parser = build_parser()
    services = [unit for unit in unit_files() if unit.suffix == ".service"]
    assert {unit.stem for unit in services} == {"lagwatch", *SPLIT}
    for unit in services:
        (command,) = key_values(unit, "ExecStart")
        binary, *args = shlex.split(command)
        assert binary == INSTALLED, unit.name
        assert isinstance(parser.parse_args(args), argparse.Namespace)  # argparse exits on an unknown command
        assert key_values(unit, "User") == ["lagwatch"], unit.name
        assert key_values(unit, "WorkingDirectory") == ["/var/lib/lagwatch"], unit.name
        assert key_values(unit, "ReadWritePaths") == ["/var/lib/lagwatch"], unit.name
        assert key_values(unit, "EnvironmentFile") == ["-/etc/lagwatch/env"], unit.name


def test_the_split_units_run_every_part_once_and_never_beside_lagwatch_service() -> None:
    """Together the split units run what `up --no-demo` runs: collectors, the Spark job, the
    API with the alert engine, the dashboard without a second engine and at `up`'s lower priority."""
    commands = {name: key_values(UNITS / f"{name}.service", "ExecStart")[0].split()[1:] for name in SPLIT}
    assert commands == {
        "lagwatch-collect": ["collect"],
        "lagwatch-stream": ["stream"],
        "lagwatch-api": ["api", "--with-alerts"],
        "lagwatch-dashboard": ["dashboard", "--no-alerts"],
    }
    for name in SPLIT:
        unit = UNITS / f"{name}.service"
        assert key_values(unit, "PartOf") == ["lagwatch.target"], name
        assert key_values(unit, "Conflicts") == ["lagwatch.service"], name
        assert key_values(unit, "WantedBy") == ["lagwatch.target"], name
    assert key_values(UNITS / "lagwatch.service", "Conflicts") == ["lagwatch.target"]
    assert key_values(UNITS / "lagwatch-dashboard.service", "Nice") == [str(DASHBOARD_NICE)]
