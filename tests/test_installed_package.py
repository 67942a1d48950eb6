"""Lagwatch installed from its wheel into a fresh virtualenv, and run from a folder outside the checkout.

What a checkout gives for free and an install must carry itself: every module and data file the
commands read at run time, the `lagwatch` entry point, the dashboard's page files, and the Spark
job's Python for its workers. So the wheel is built from the checkout's files and installed with
its dependencies into a virtualenv under tmp_path (harness/installed_package.py), and every command
runs there from that virtualenv's bin/, with that folder as its working directory and no PYTHONPATH:
`lagwatch init` against the real broker (with its JMX port), `lagwatch check`, then `lagwatch up
--no-demo` until a lagging group's rows reach the lake beside the config, and Ctrl-C. The
dashboard's pages then run from the installed files over that lake, and a Spark cluster's
executors import the project from the zip the installed driver builds and ships.
"""

from __future__ import annotations

import ast
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import tomllib
import uuid
import zipfile
from collections.abc import Callable, Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

import duckdb
import pytest
from packaging.requirements import Requirement

from harness.installed_package import (
    ROOT,
    Venv,
    build_wheel,
    create_venv,
    install,
    marked_processes,
    shipped_packages,
    source_files,
)
from harness.kafka_workload import KafkaWorkload
from harness.local_stack import UP_LINE
from harness.polling import wait_until
from harness.real_kafka import RealKafkaBroker
from harness.secure_kafka import MECHANISM, SecureKafkaBroker, new_scram_user
from harness.spark_cluster import SparkStandaloneCluster
from lagwatch import exit_codes
from shell.broker import free_port

MARKER_ENV = "LAGWATCH_INSTALLED_TEST_RUN"
#: Produced per partition, and where the group's commits leave it: lag 30 on partition 0, none on 1.
PRODUCED, COMMITTED = {0: 50, 1: 30}, {0: 20, 1: 30}
UP_TIMEOUT_S = 300
#: Python files and pyproject.toml's package-data patterns.
SHIPPED_SUFFIXES = (".py", ".sql", ".java")
#: What an operator waits after Ctrl-C before calling a stop hung (docs/operations.md).
STOP_LIMIT_S = 10


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_wheel(tmp_path_factory.mktemp("wheel"))


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Venv:
    venv = create_venv(tmp_path_factory.mktemp("installed") / "venv")
    install(venv, wheel)
    return venv


def run(venv: Venv, cwd: Path, *command: str, **env: str) -> subprocess.CompletedProcess[str]:
    """A command from the virtualenv's bin/ (`lagwatch`, `python`), run to completion in `cwd`."""
    return subprocess.run(
        [str(venv.bin(command[0])), *command[1:]],
        cwd=cwd,
        env=venv.environment(**env),
        capture_output=True,
        text=True,
        timeout=180,
    )


def set_keys(text: str, table: str, settings: dict[str, Any]) -> str:
    """`key = value` lines in `[table]` of a config's text: the written line replaced, or a new one added."""
    header = re.search(rf"(?m)^\[{re.escape(table)}\][^\n]*\n", text)
    assert header is not None, f"no [{table}] in the written config"
    start, end = header.end(), text.find("\n[", header.end())
    end = len(text) if end < 0 else end
    body = text[start:end]
    for key in settings:
        body = re.sub(rf"(?m)^{re.escape(key)} = .*\n", "", body)
    lines = "".join(f"{key} = {json.dumps(value)}\n" for key, value in settings.items())
    return text[:start] + lines + body + text[end:]


def imported_libraries() -> dict[str, str]:
    """Top-level module -> a file importing it, for every library the shipped packages import."""
    own = set(shipped_packages())
    found: dict[str, str] = {}
    for name in source_files():
        if name.split("/")[0] not in own or not name.endswith(".py"):
            continue
        for node in ast.walk(ast.parse((ROOT / name).read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules = [node.module]
            else:
                continue
            for module in modules:
                top = module.split(".")[0]
                if top not in own and top not in sys.stdlib_module_names:
                    found.setdefault(top, name)
    return found


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def installed_closure(requirements: list[str]) -> set[str]:
    """The distributions `requirements` bring in, their own requirements included (extras left out)."""
    todo, seen = [Requirement(text) for text in requirements], set()
    while todo:
        requirement = todo.pop()
        name = canonical(requirement.name)
        if name in seen or (requirement.marker and not requirement.marker.evaluate({"extra": ""})):
            continue
        seen.add(name)
        todo += [Requirement(text) for text in metadata.requires(name) or []]
    return seen


def test_every_library_the_packages_import_is_a_declared_dependency() -> None:
    """A library installed by hand in the development virtualenv but missing from pyproject.toml
    imports here and fails only once installed from the wheel: found here without building one."""
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    provided = installed_closure(declared)
    distributions = metadata.packages_distributions()
    missing = {
        module: f"imported by {where}"
        for module, where in imported_libraries().items()
        if not {canonical(d) for d in distributions.get(module, [])} & provided
    }
    assert not missing, f"add to pyproject.toml [project] dependencies (and pin in requirements.txt): {missing}"


@pytest.mark.slow
def test_the_wheel_holds_every_module_of_the_shipped_packages(wheel: Path) -> None:
    """Every Python file of the packages pyproject.toml names (namespace folders too), and the entry point."""
    packages = tuple(f"{package}/" for package in shipped_packages())
    expected = {name for name in source_files() if name.startswith(packages) and name.endswith(SHIPPED_SUFFIXES)}
    dist_info = "-".join(wheel.name.split("-")[:2]) + ".dist-info/"
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        entry_points = archive.read(f"{dist_info}entry_points.txt").decode()
    assert {name for name in names if not name.startswith(dist_info)} == expected
    assert {"dashboard/views/groups.py", "collectors/admin/collector.py"} <= names
    assert "lagwatch = shell.cli:main" in entry_points


@pytest.mark.slow
def test_imports_resolve_in_the_virtualenv_never_in_the_checkout(installed: Venv, tmp_path: Path) -> None:
    script = "import json, sys, importlib; print(json.dumps({'path': sys.path, 'files': "
    script += f"[importlib.import_module(p).__file__ for p in {shipped_packages()!r}]}}))"
    done = run(installed, tmp_path, "python", "-c", script)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert all(Path(file).is_relative_to(installed.site_packages) for file in found["files"]), found["files"]
    assert not [entry for entry in found["path"] if entry and Path(entry).resolve().is_relative_to(ROOT)]


@pytest.fixture
def lagging_group(kafka: KafkaWorkload, unique: Callable[[str], str]) -> tuple[str, str]:
    """(topic, group): a group whose committed offsets trail the end of partition 0 by 30 records."""
    topic, group = unique("installed-topic"), unique("installed-group")
    kafka.create_topic(topic, len(PRODUCED))
    kafka.produce(topic, PRODUCED)
    kafka.commit(group, topic, COMMITTED)
    return topic, group


def lake_lag(lake: Path, group: str, topic: str) -> dict[int, int]:
    """Partition -> the group's newest lag on `topic` in lag_1m, read from the Parquet files themselves."""
    if not any((lake / "lag_1m").glob("*/*.parquet")):
        return {}
    rows = duckdb.execute(
        f"SELECT partition, arg_max(lag, window_start) FROM read_parquet('{lake.as_posix()}/lag_1m/*/*.parquet', "
        "union_by_name = true) WHERE group_id = ? AND topic = ? GROUP BY partition",
        [group, topic],
    ).fetchall()
    return dict(rows)


def jmx_up(lake: Path) -> bool:
    """The broker's JMX target was scraped (the jpype backend, from the installed jpype)."""
    if not any((lake / "metrics_1m").glob("*/*.parquet")):
        return False
    glob = f"{lake.as_posix()}/metrics_1m/*/*.parquet"
    rows = duckdb.sql(
        f"SELECT max(last) FROM read_parquet('{glob}', union_by_name = true) WHERE source = 'jmx' AND metric = 'up'"
    ).fetchall()
    return rows == [(1.0,)]


class Up:
    """`lagwatch up --no-demo` in the background, its output in a file, its processes marked."""

    def __init__(self, venv: Venv, work_dir: Path) -> None:
        self.marker, self.log = uuid.uuid4().hex, work_dir / "up.log"
        with open(self.log, "ab") as out:
            self.process = subprocess.Popen(
                [str(venv.bin("lagwatch")), "up", "--no-demo"],
                cwd=work_dir,
                env=venv.environment(PYTHONUNBUFFERED="1", **{MARKER_ENV: self.marker}),
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # like a terminal's Ctrl-C: the supervisor alone is signalled
            )

    def output(self) -> str:
        logs = [self.log, *sorted((self.log.parent / "state" / "logs").glob("*.log"))]
        return "\n".join(f"--- {f.name}\n{f.read_text(errors='replace')[-2000:]}" for f in logs if f.exists())

    def running(self) -> bool:
        assert self.process.poll() is None, f"up exited with {self.process.returncode}:\n{self.output()}"
        return True

    def left_behind(self) -> list[int]:
        return marked_processes(MARKER_ENV, self.marker)

    def kill_everything(self) -> None:
        for pid in self.left_behind():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.process.wait()


@pytest.fixture
def up(installed: Venv, tmp_path: Path) -> Iterator[Callable[[], Up]]:
    """Starts `up` on demand; whatever a failed test leaves of it is killed afterwards."""
    started: list[Up] = []

    def start() -> Up:
        started.append(Up(installed, tmp_path))
        return started[-1]

    yield start
    for stack in started:
        stack.kill_everything()


@pytest.mark.slow
def test_init_check_and_up_from_a_folder_outside_the_checkout(
    installed: Venv,
    broker: RealKafkaBroker,
    lagging_group: tuple[str, str],
    unique: Callable[[str], str],
    up: Callable[[], Up],
    tmp_path: Path,
) -> None:
    topic, group = lagging_group
    init = run(
        installed,
        tmp_path,
        "lagwatch",
        "init",
        "--bootstrap-servers",
        broker.bootstrap_servers,
        "--jmx",
        f"127.0.0.1:{broker.jmx_port}",
        "--cluster-name",
        unique("installed"),
        "--non-interactive",
    )
    assert init.returncode == 0, init.stderr
    config = tmp_path / "config.toml"
    # Free ports, a quick cycle, and Lagwatch's own topic and group named for this test (a shared broker).
    text = set_keys(config.read_text(), "transport", {"samples_topic": unique("samples")})
    text = set_keys(text, "collect", {"interval_s": 2, "timeout_s": 2, "coordination_group": unique("collectors")})
    text = set_keys(text, "dashboard", {"port": free_port()})
    config.write_text(set_keys(text, "api", {"port": free_port()}))

    check = run(installed, tmp_path, "lagwatch", "check")
    assert check.returncode == 0, check.stdout + check.stderr

    stack = up()
    lake = tmp_path / "lake"
    expected = {p: PRODUCED[p] - COMMITTED[p] for p in PRODUCED}
    wait_until(lambda: stack.running() and lake_lag(lake, group, topic) == expected, UP_TIMEOUT_S, f"{group}'s lag")
    wait_until(lambda: stack.running() and jmx_up(lake), 60, "the broker's JMX scrape in the lake")
    wait_until(lambda: stack.running() and UP_LINE in stack.log.read_text(), UP_TIMEOUT_S, "every part up")
    status = run(installed, tmp_path, "lagwatch", "status")
    assert status.returncode == 0, f"{status.stdout}{status.stderr}"

    stack.process.send_signal(signal.SIGINT)
    try:
        code = stack.process.wait(STOP_LIMIT_S)
    except subprocess.TimeoutExpired:
        pytest.fail(f"up still running {STOP_LIMIT_S} s after Ctrl-C:\n{stack.output()}")
    assert code == 0, stack.output()
    wait_until(lambda: not stack.left_behind(), 3, "no process of the run left")

    pages = dashboard_pages(installed, tmp_path, config)
    assert pages["exceptions"] == [], pages["exceptions"]
    assert any(group in frame for frame in pages["groups"]), "the lagging group is on the Consumer groups page"


def dashboard_pages(venv: Venv, cwd: Path, config: Path) -> dict[str, Any]:
    """The installed dashboard's default page and its Consumer groups page, run by Streamlit's
    AppTest over the lake `up` wrote: their exceptions, and the groups page's tables as CSV."""
    script = textwrap.dedent(
        """
        import json
        from pathlib import Path
        import dashboard
        from streamlit.testing.v1 import AppTest

        at = AppTest.from_file(str(Path(dashboard.__file__).with_name("app.py")), default_timeout=90)
        at.run()
        errors = [str(e.value) for e in at.exception]
        at.switch_page("views/groups.py")
        at.run()
        errors += [str(e.value) for e in at.exception]
        print(json.dumps({"exceptions": errors, "groups": [d.value.to_csv() for d in at.dataframe]}))
        """
    )
    done = run(venv, cwd, "python", "-c", script, LAGWATCH_CONFIG=str(config))
    assert done.returncode == 0, done.stderr[-3000:]
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


@pytest.mark.slow
def test_a_cluster_s_executors_import_the_project_from_the_zip_the_installed_driver_ships(
    installed: Venv, wheel: Path, spark_cluster: SparkStandaloneCluster, tmp_path: Path
) -> None:
    """Installed, the driver's packages live in site-packages: the zip it ships is built from
    there, holds exactly the wheel's files of those packages, and is what the executors import."""
    script = textwrap.dedent(
        f"""
        import json
        from pathlib import Path
        from lagwatch.config import parse_config
        from spark_jobs.session import build_session

        config = parse_config({{"cluster": {{"name": "t"}}, "spark": {{"master": "{spark_cluster.url}"}}}})
        spark = build_session(config, archive_dir=Path("pyfiles"))

        def where(_):
            import lagwatch, spark_jobs.kafka_source
            return [(spark_jobs.kafka_source.__file__, lagwatch.__file__)]

        print("MODULES " + json.dumps(spark.sparkContext.parallelize(range(2), 2).mapPartitions(where).collect()))
        spark.stop()
        """
    )
    done = run(installed, tmp_path, "python", "-c", script)
    line = next((line for line in done.stdout.splitlines() if line.startswith("MODULES ")), None)
    assert line is not None, done.stderr[-3000:]
    (archive,) = (tmp_path / "pyfiles").glob("lagwatch-*.zip")
    found = {path for pair in json.loads(line.removeprefix("MODULES ")) for path in pair}
    assert found == {f"./{archive.name}/spark_jobs/kafka_source.py", f"./{archive.name}/lagwatch/__init__.py"}
    with zipfile.ZipFile(wheel) as built, zipfile.ZipFile(archive) as shipped:
        expected = {n: built.read(n) for n in built.namelist() if n.startswith(("lagwatch/", "spark_jobs/"))}
        assert {n: shipped.read(n) for n in shipped.namelist()} == expected


@pytest.mark.slow
def test_check_from_the_installed_package_names_each_missing_acl_on_a_sasl_broker(
    installed: Venv, secure_broker: SecureKafkaBroker, unique: Callable[[str], str], tmp_path: Path
) -> None:
    """A principal with no ACL: `check` fails and prints the kafka-acls.sh line of each grant it lacks."""
    user, password = new_scram_user(secure_broker, unique("installed-monitor"))
    init = run(
        installed,
        tmp_path,
        "lagwatch",
        "init",
        "--bootstrap-servers",
        secure_broker.bootstrap_servers,
        "--security-protocol",
        "SASL_SSL",
        "--sasl-mechanism",
        MECHANISM,
        "--ssl-ca-location",
        str(secure_broker.certificates.ca),
        "--cluster-name",
        "secured",
        "--non-interactive",
    )
    assert init.returncode == 0, init.stderr
    config = tmp_path / "config.toml"
    config.write_text(set_keys(config.read_text(), "dashboard", {"port": free_port()}))
    config.write_text(set_keys(config.read_text(), "api", {"port": free_port()}))

    check = run(
        installed,
        tmp_path,
        "lagwatch",
        "check",
        LAGWATCH_CLUSTER_SASL_USERNAME=user,
        LAGWATCH_CLUSTER_SASL_PASSWORD=password,
    )

    assert check.returncode == exit_codes.FAILED, check.stdout + check.stderr
    assert re.search(r"^PASS cluster secured: Kafka .*, 1 broker at ", check.stdout, re.M), check.stdout
    assert (
        f"FAIL acl secured: missing Describe on group '*' for User:{user} — run: kafka-acls.sh --bootstrap-server "
        f"{secure_broker.bootstrap_servers} --command-config admin.properties --add --allow-principal User:{user} "
        "--operation Describe --group '*'"
    ) in check.stdout
    assert f"FAIL acl secured: missing Describe on the cluster for User:{user}" in check.stdout
