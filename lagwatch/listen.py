"""Whether this host lets a server listen where the config says, asked before the server starts.

`lagwatch check`, the API and the dashboard ask the same question with the same wording, so an
operator meets one message that names the config key and the fix, instead of a web server's own
startup error.
"""

from __future__ import annotations

import errno
import socket
from dataclasses import dataclass


@dataclass(frozen=True)
class ListenRefused:
    """Why `host:port` cannot be listened on, and what to change."""

    problem: str
    fix: str

    def message(self, key: str) -> str:
        return f"{key}: {self.problem} — {self.fix}"


def listen_refused(key: str, host: str, port: int) -> ListenRefused | None:
    """None when a server could bind `host:port` now; else why not, with the fix naming `key`
    (e.g. "api.port"). SO_REUSEADDR as the servers set it: a socket in TIME_WAIT is no conflict."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            return _refusal(key, host, port, exc)
    return None


def _refusal(key: str, host: str, port: int, exc: OSError) -> ListenRefused:
    if exc.errno == errno.EADDRINUSE:
        running = "Lagwatch already running? `lagwatch status`"
        return ListenRefused(
            f"{host}:{port} is in use", f"stop what listens there ({running}) or set {key} to a free port"
        )
    section = key.split(".")[0]
    return ListenRefused(
        f"cannot listen on {host}:{port} ({exc.strerror or exc})", f"set {section}.host to an address of this host"
    )
