"""A server whose port is taken refuses to start with one line naming the config key, exit FAILED."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from harness.config_file import section_lines
from harness.processes import run_lagwatch
from lagwatch import exit_codes


@pytest.fixture
def taken_port() -> int:
    """A port held by a listening socket for the test."""
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    yield holder.getsockname()[1]
    holder.close()


@pytest.mark.parametrize(("command", "section"), [(["api"], "api"), (["dashboard", "--no-alerts"], "dashboard")])
def test_a_taken_port_is_named_by_its_key(tmp_path: Path, taken_port: int, command: list[str], section: str) -> None:
    config = tmp_path / "config.toml"
    lines = section_lines(
        {section: {"host": "127.0.0.1", "port": taken_port}, "lake": {"path": str(tmp_path / "lake")}}
    )
    config.write_text("\n".join(lines) + "\n")
    result = run_lagwatch(config, *command, timeout_s=60)
    assert result.returncode == exit_codes.FAILED, result.stderr
    assert f"{section}.port: 127.0.0.1:{taken_port} is in use" in result.stderr
    assert f"set {section}.port to a free port" in result.stderr
