"""How one process starts another `lagwatch` command: the command line is the contract.

The shell runs each part as its own process, and a part that needs another command run (the
dashboard's backtest, the stack's components) starts it through the same documented CLI, never
by importing it. The module path lives here once.
"""

from __future__ import annotations

import sys
from pathlib import Path

from lagwatch.config import Config


def lagwatch_command(config: Config, *args: str, log_level: str | None = None) -> list[str]:
    """`python -m shell.cli [--log-level L] [--config PATH] ARGS…` with this interpreter and config."""
    command = [sys.executable, "-m", "shell.cli"]
    if log_level:
        command += ["--log-level", log_level]
    if config.source_path:
        command += ["--config", str(Path(config.source_path).resolve())]
    return [*command, *args]
