"""The container image as an operator runs it: built by scripts/build-image.sh (podman, a
debootstrap base, no registry), a config in the volume, the real test broker on the host's
network.

In the container, as the non-root user and with no `--config` (the image's default path in the
volume): `lagwatch check` passes, `lagwatch up --no-demo` serves /healthz on the API port and
the image's HEALTHCHECK reports healthy, a consumer group with lag on the broker reaches the lake
on the volume (read from the host with DuckDB, the lag equal to what was left unread), and
`podman stop` ends it with exit code 0.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from harness.config_file import section_lines
from harness.kafka_workload import KafkaWorkload
from harness.polling import wait_until
from harness.real_kafka import RealKafkaBroker
from lagwatch import exit_codes
from lagwatch.lake import connect_readonly
from shell.broker import free_port

ROOT = Path(__file__).resolve().parents[2]
IMAGE = "localhost/lagwatch:dev"
VOLUME = "/var/lib/lagwatch"
#: runc (crun fails on hosts with a hybrid cgroup layout), the host's network (the test broker
#: listens on loopback), and ulimits below the host's hard limits (podman's defaults exceed them).
PODMAN = ["podman", "--runtime", "runc"]
RUN_FLAGS = ["--network", "host", "--ulimit", "nofile=16384:16384", "--ulimit", "nproc=4096:4096"]
BUILD_TIMEOUT_S = 1800
UP_TIMEOUT_S = 300
LAG_TIMEOUT_S = 240
#: Records produced per partition, and the offsets the group commits: its lag is the difference.
PRODUCED = {0: 100, 1: 100}
COMMITTED = {0: 40, 1: 10}

#: The first test also pays for the build (a cold one takes minutes: debootstrap, apt, pip).
pytestmark = [pytest.mark.slow, pytest.mark.timeout(BUILD_TIMEOUT_S + UP_TIMEOUT_S + LAG_TIMEOUT_S)]


def tail(path: Path, chars: int = 3000) -> str:
    return path.read_text(errors="replace")[-chars:] if path.exists() else ""


def podman(*args: str, timeout_s: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*PODMAN, *args], capture_output=True, text=True, timeout=timeout_s, check=False)


@pytest.fixture(scope="module")
def image(tmp_path_factory: pytest.TempPathFactory) -> str:
    """lagwatch:dev, built (or found up to date in podman's layer cache) by scripts/build-image.sh."""
    if shutil.which("podman") is None:
        pytest.fail("podman is not installed: `make test-system-deps` installs it (scripts/install-system-deps.sh)")
    log = tmp_path_factory.mktemp("image") / "build.log"
    with open(log, "wb") as out:
        done = subprocess.run(
            [str(ROOT / "scripts" / "build-image.sh")],
            cwd=ROOT,
            env={**os.environ, "LAGWATCH_IMAGE": IMAGE},
            stdout=out,
            stderr=subprocess.STDOUT,
            timeout=BUILD_TIMEOUT_S,
            check=False,
        )
    assert done.returncode == 0, f"scripts/build-image.sh failed ({done.returncode}):\n{tail(log)}"
    return IMAGE


@pytest.fixture
def volume(tmp_path: Path) -> Path:
    """A host folder mounted as the image's volume, writable by its non-root user (uid 10001)."""
    folder = tmp_path / "volume"
    folder.mkdir()
    folder.chmod(0o777)
    return folder


def write_config(volume: Path, broker: RealKafkaBroker, unique: Callable[[str], str], api_port: int) -> None:
    """config.toml at the image's default path; every path relative, so it resolves inside the volume."""
    sections = {
        "cluster": {"name": "image", "bootstrap_servers": broker.bootstrap_servers},
        "transport": {"samples_topic": unique("samples")},
        "collect": {"interval_s": 2, "timeout_s": 2, "coordination_group": unique("collectors")},
        "lake": {"path": "lake", "duckdb_path": "lagwatch.duckdb"},
        "spark": {"master": "local[1]", "trigger_s": 2, "checkpoint_dir": "state/checkpoints", "watermark_s": 10},
        "lag": {"window_s": 40},
        "dashboard": {"port": free_port()},
        "api": {"port": api_port},
        "alerts": {"state_dir": "state/alerts", "use_default_rules": False, "leader_topic": unique("leader")},
    }
    path = volume / "config.toml"
    path.write_text("\n".join(section_lines(sections)) + "\n")
    path.chmod(0o644)


def run_once(image: str, volume: Path, *command: str) -> subprocess.CompletedProcess[str]:
    return podman("run", "--rm", *RUN_FLAGS, "--volume", f"{volume}:{VOLUME}", image, *command, timeout_s=300)


@pytest.fixture
def container(image: str, volume: Path) -> Iterator[Callable[..., str]]:
    """Starts the image detached (its default command unless given one); stopped and removed after."""
    names: list[str] = []

    def start(*command: str) -> str:
        name = f"lagwatch-test-{uuid.uuid4().hex[:8]}"
        started = podman("run", "--detach", "--name", name, *RUN_FLAGS, "--volume", f"{volume}:{VOLUME}", image,
                         *command)  # fmt: skip
        assert started.returncode == 0, f"podman run failed: {started.stderr}"
        names.append(name)
        return name

    yield start
    for name in names:
        podman("rm", "--force", "--time", "10", name)


def healthz(port: int) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as response:
            return int(response.status)
    except OSError:
        return 0


def running(name: str) -> bool:
    state = podman("inspect", "--format", "{{.State.Running}}", name)
    return state.stdout.strip() == "true"


def logs(name: str) -> str:
    done = podman("logs", name)
    return (done.stdout + done.stderr)[-4000:]


def lag_by_partition(volume: Path, views: Path, group: str) -> dict[int, int]:
    """The group's newest lag per partition in the lake on the volume ({} while there is none)."""
    if not any((volume / "lake" / "lag_1m").glob("*/*.parquet")):
        return {}
    con = connect_readonly(volume / "lake", views)  # views of the host's paths, beside the volume
    try:
        rows = con.execute(
            "SELECT partition, arg_max(lag, window_start) FROM lag_1m WHERE group_id = ? GROUP BY partition",
            [group],
        ).fetchall()
    finally:
        con.close()
    return {int(partition): int(lag) for partition, lag in rows}


def test_check_passes_in_the_container(
    image: str, volume: Path, broker: RealKafkaBroker, unique: Callable[[str], str]
) -> None:
    write_config(volume, broker, unique, free_port())
    done = run_once(image, volume, "check")
    assert done.returncode == exit_codes.OK, f"lagwatch check in the image:\n{done.stdout}\n{done.stderr}"
    assert "jdk" in done.stdout and "FAIL" not in done.stdout, done.stdout


def test_up_serves_health_and_writes_lag_into_the_volume(
    container: Callable[..., str],
    volume: Path,
    broker: RealKafkaBroker,
    kafka: KafkaWorkload,
    unique: Callable[[str], str],
    tmp_path: Path,
) -> None:
    api_port = free_port()
    write_config(volume, broker, unique, api_port)
    name = container()  # the image's default command: up --no-demo

    wait_until(lambda: healthz(api_port) == 200 or not running(name), UP_TIMEOUT_S, "the API's /healthz")
    assert healthz(api_port) == 200, f"the container stopped before serving /healthz:\n{logs(name)}"
    check = podman("healthcheck", "run", name)  # no systemd here to schedule it: run it once by hand
    assert check.returncode == 0, f"HEALTHCHECK failed: {check.stdout}{check.stderr}\n{logs(name)}"
    health = podman("inspect", "--format", "{{.State.Health.Status}}", name).stdout.strip()
    assert health == "healthy", health

    topic, group = unique("image-topic"), unique("image-group")
    kafka.create_topic(topic, len(PRODUCED))
    kafka.produce(topic, PRODUCED)
    kafka.commit(group, topic, COMMITTED)
    expected = {p: PRODUCED[p] - COMMITTED[p] for p in PRODUCED}
    views = tmp_path / "host-views.duckdb"
    wait_until(lambda: lag_by_partition(volume, views, group) == expected, LAG_TIMEOUT_S, f"{group}'s lag in the lake")
    owners = {path.stat().st_uid for path in (volume / "lake" / "lag_1m").glob("*/*.parquet")}
    assert owners == {10001}, f"lake files owned by {owners}, not the image's user"

    stopped = podman("stop", "--time", "30", name, timeout_s=60)
    assert stopped.returncode == 0, stopped.stderr
    code = podman("inspect", "--format", "{{.State.ExitCode}}", name).stdout.strip()
    assert code == str(exit_codes.OK), f"up exited with {code} on podman stop:\n{logs(name)}"
