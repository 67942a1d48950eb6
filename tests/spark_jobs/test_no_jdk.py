"""`lagwatch stream` without a usable Java says so in one line with the fix, before it starts Spark."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.config_file import section_lines
from harness.processes import run_lagwatch
from lagwatch import exit_codes
from lagwatch.java import JDK_FIX


def test_stream_without_java_names_where_it_looked_and_the_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    missing = tmp_path / "no-jdk"
    monkeypatch.setenv("JAVA_HOME", str(missing))
    config = tmp_path / "config.toml"
    sections = {"lake": {"path": str(tmp_path / "lake")}, "spark": {"checkpoint_dir": str(tmp_path / "checkpoints")}}
    config.write_text("\n".join(section_lines(sections)) + "\n")

    result = run_lagwatch(config, "stream", timeout_s=60)

    assert result.returncode == exit_codes.FAILED, result.stderr
    expected = f"lagwatch: the Spark job needs Java 17+: no java found (looked in JAVA_HOME={missing}) — {JDK_FIX}"
    assert expected in result.stderr.splitlines()
    assert "Traceback" not in result.stderr and not (tmp_path / "checkpoints").exists()
