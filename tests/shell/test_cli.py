"""The command line keeps the README's word: options anywhere, validation at load by every
command, the documented exit codes, and `lagwatch sql` inside the same sandbox as the SQL page."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from lagwatch import __version__, exit_codes
from shell.broker import free_port

REPO = Path(__file__).resolve().parents[2]


def lagwatch(*args: str, cwd: Path = REPO, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k != "LAGWATCH_CONFIG"}
    environ["PYTHONPATH"] = str(REPO)
    return subprocess.run(
        [sys.executable, "-m", "shell.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**environ, **(env or {})},
        timeout=120,
    )


def write_config(tmp_path: Path, extra: str = "") -> Path:
    """A config on a port where nothing listens: a command that got past validation would exit 3."""
    path = tmp_path / "c.toml"
    path.write_text(
        f'[cluster]\nbootstrap_servers = "127.0.0.1:{free_port()}"\n'
        f'[lake]\npath = "{tmp_path / "lake"}"\nduckdb_path = "{tmp_path / "l.duckdb"}"\n'
        f'[alerts]\nstate_dir = "{tmp_path / "alerts"}"\n{extra}'
    )
    return path


BAD_FOR = '[[alerts.rules]]\nname = "LagHigh"\nmetric = "total_lag"\nfor = "5 minutes"\n'


@pytest.mark.parametrize("command", [["collect", "--once"], ["stream"], ["sql", "select 1"], ["dashboard"]])
def test_a_bad_alert_duration_is_refused_by_every_command(tmp_path: Path, command: list[str]) -> None:
    done = lagwatch("--config", str(write_config(tmp_path, BAD_FOR)), *command)
    assert done.returncode == exit_codes.BAD_INPUT, done.stderr
    assert "alerts.rules 'LagHigh': for: bad duration '5 minutes'" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_rule_the_engine_would_refuse_stops_the_dashboard_at_load(tmp_path: Path) -> None:
    rule = '[[alerts.rules]]\nname = "Typo"\nmetric = "total_lagg"\n'
    done = lagwatch("dashboard", "--config", str(write_config(tmp_path, rule)))
    assert done.returncode == exit_codes.BAD_INPUT, done.stderr
    assert "alerts.rules 'Typo'" in done.stderr and "total_lagg" in done.stderr


def test_retention_keys_must_name_lake_tables(tmp_path: Path) -> None:
    path = write_config(tmp_path)
    path.write_text(path.read_text().replace("[alerts]", "retention_days = { lag_1mm = 3 }\n[alerts]"))
    done = lagwatch("collect", "--once", "--config", str(path))
    assert done.returncode == exit_codes.BAD_INPUT, done.stderr
    assert "lake.retention_days: unknown table(s) ['lag_1mm']" in done.stderr


def test_config_before_or_after_the_subcommand(tmp_path: Path) -> None:
    path = write_config(tmp_path)
    (tmp_path / "lake").mkdir()
    after = lagwatch("sql", "select 41 + 1 as answer", "--format", "csv", "--config", str(path))
    before = lagwatch("--config", str(path), "sql", "select 41 + 1 as answer", "--format", "csv")
    assert after.returncode == before.returncode == exit_codes.OK, after.stderr + before.stderr
    assert after.stdout == before.stdout == "answer\n42\n"
    refused = lagwatch("collect", "--once", "--config", str(tmp_path / "missing.toml"))
    assert refused.returncode == exit_codes.BAD_INPUT
    assert f"config file not found: {tmp_path / 'missing.toml'}" in refused.stderr


def test_version() -> None:
    done = lagwatch("--version")
    assert done.returncode == exit_codes.OK
    assert done.stdout.strip() == f"lagwatch {__version__}"


def test_sql_refuses_files_outside_the_lake(tmp_path: Path) -> None:
    path = write_config(tmp_path)
    (tmp_path / "lake").mkdir()
    done = lagwatch("sql", "select * from read_csv('/etc/passwd')", "--config", str(path))
    assert done.returncode == exit_codes.BAD_INPUT
    assert "Reading files outside the lake is not allowed" in done.stderr
    assert "root:" not in done.stdout
    computed = lagwatch("sql", "select * from read_csv(chr(47) || 'etc/passwd')", "--config", str(path))
    assert computed.returncode == exit_codes.BAD_INPUT, "DuckDB's own sandbox refuses a path built at run time"
    assert "root:" not in computed.stdout


def test_missing_default_config_is_said_and_nothing_is_created(tmp_path: Path) -> None:
    done = lagwatch("sql", "select 1", cwd=tmp_path)
    assert f"no config file at {tmp_path / 'config.toml'}" in done.stderr
    assert "embedded demo broker" in done.stderr
    assert done.returncode == exit_codes.FAILED
    assert f"no lake at {tmp_path / 'lake'}" in done.stderr
    assert list(tmp_path.iterdir()) == [], "no ./lake or ./lagwatch.duckdb created"


def test_readme_lists_exactly_the_exit_codes() -> None:
    readme = (REPO / "README.md").read_text()
    section = readme.split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    listed = {int(code) for code in re.findall(r"^\| `(\d+)` \|", section, re.MULTILINE)}
    defined = {value for name, value in vars(exit_codes).items() if name.isupper()}
    assert listed == defined
