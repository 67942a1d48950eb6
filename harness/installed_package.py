"""Lagwatch as a user installs it: the wheel built from the checkout, in a fresh virtualenv outside it.

Why the wheel is built from a copy of the checkout's files (those git would commit: tracked, or
new and not ignored): setuptools builds inside the source folder and keeps what it once copied
to build/lib, so a module deleted since could still reach a wheel built in place. The copy is
what a fresh clone or the sdist holds, and the checkout gets no build/ or egg-info from a test.

Why a wheelhouse: a fresh virtualenv would otherwise download every dependency again. Their
wheels, at requirements.txt's pins, are kept in a cache folder outside the checkout and
installed from there with no index. It is filled through pip's ordinary index the first time,
and refilled whole whenever the offline install finds a wheel missing (a dependency added, a
pin moved), so it never holds more than one set.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REQUIREMENTS = ROOT / "requirements.txt"
#: Variables that would lead an installed command back to the checkout or to the caller's setup.
FOREIGN_ENV = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "SPARK_HOME", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")
PIP = (sys.executable, "-m", "pip")


class InstallError(RuntimeError):
    """Building or installing the package failed; the message carries pip's output."""


@dataclass(frozen=True)
class Venv:
    """A virtualenv made with `python -m venv`; commands run from its bin/ as an operator's would."""

    path: Path

    @property
    def python(self) -> Path:
        return self.path / "bin" / "python"

    def bin(self, name: str) -> Path:
        return self.path / "bin" / name

    @property
    def site_packages(self) -> Path:
        (found,) = self.path.glob("lib/python3*/site-packages")
        return found

    def environment(self, **extra: str) -> dict[str, str]:
        """This process's environment without anything pointing at the checkout or another
        interpreter (PYTHONPATH, LAGWATCH_*, Spark's Python), this venv's bin/ first on PATH."""
        env = outside_environment()
        env["PATH"] = os.pathsep.join([str(self.path / "bin"), env.get("PATH", "/usr/bin:/bin")])
        return {**env, **extra}


def shipped_packages() -> list[str]:
    """The top-level packages pyproject.toml ships (its `packages.find` include list)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return [pattern.rstrip("*") for pattern in config["tool"]["setuptools"]["packages"]["find"]["include"]]


def source_files() -> list[str]:
    """The checkout's files as git would commit them: tracked, or new and not ignored."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    return [name for name in listed.split("\0") if name and (ROOT / name).is_file()]


def copy_source(target: Path) -> Path:
    for name in source_files():
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, target / name)
    return target


def build_wheel(work_dir: Path) -> Path:
    """`pip wheel --no-deps` on a copy of the checkout; the wheel's path."""
    source, out = copy_source(work_dir / "source"), work_dir / "dist"
    _run([*PIP, "wheel", "--no-deps", "--quiet", "--wheel-dir", str(out), str(source)], "pip wheel")
    (wheel,) = out.glob("lagwatch-*.whl")
    return wheel


def wheelhouse() -> Path:
    """The cache folder of dependency wheels."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "lagwatch-tests" / "wheelhouse"


def create_venv(path: Path) -> Venv:
    """A fresh virtualenv of this Python; without pip of its own, since this process's pip installs into it."""
    _run([sys.executable, "-m", "venv", "--without-pip", str(path)], "python -m venv")
    return Venv(path)


def install(venv: Venv, wheel: Path, house: Path | None = None) -> None:
    """Install `wheel` and its dependencies into `venv`: offline from the wheelhouse, filling it first if needed.

    No bytecode is compiled at install time (Python compiles on first import instead): that is most
    of an install's time for PySpark's thousands of modules.
    """
    house = house or wheelhouse()
    offline = [*PIP, "--python", str(venv.python), "install", "--quiet", "--no-compile", "--no-index"]
    offline += ["--find-links", str(house), "--constraint", str(REQUIREMENTS), str(wheel)]
    if not (house.is_dir() and _try(offline)):
        fill_wheelhouse(house, wheel)
        _run(offline, "pip install from the wheelhouse")
    _run([str(venv.python), "-c", "import lagwatch, shell.cli"], f"importing the installed {wheel.name}")


def fill_wheelhouse(house: Path, wheel: Path) -> None:
    """Wheels of `wheel`'s dependencies at the pinned versions, through pip's index (and its wheel cache).

    Built in a folder of their own that then takes the old one's place: an interrupted fill leaves
    the old set whole, and a finished one leaves no wheel of an older pin behind.
    """
    partial, old = (house.with_name(f"{house.name}.{os.getpid()}.{kind}") for kind in ("partial", "old"))
    command = [*PIP, "wheel", "--quiet", "--wheel-dir", str(partial), "--constraint", str(REQUIREMENTS), str(wheel)]
    try:
        _run(command, "pip wheel (filling the wheelhouse)")
        for built in partial.glob("lagwatch-*.whl"):  # the package under test is never cached
            built.unlink()
        house.parent.mkdir(parents=True, exist_ok=True)
        if house.exists():
            house.rename(old)
        partial.rename(house)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
        shutil.rmtree(old, ignore_errors=True)


def marked_processes(marker_env: str, marker: str) -> list[int]:
    """Pids of live processes whose environment carries `marker_env=marker` (every descendant inherits it)."""
    needle = f"{marker_env}={marker}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            if needle in (entry / "environ").read_bytes().split(b"\0") and stat[stat.rindex(")") + 2] not in "ZX":
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def outside_environment() -> dict[str, str]:
    """This process's environment without what points at the checkout or another interpreter.

    Why pip needs it too: the Spark session fixture puts the checkout on PYTHONPATH, where pip
    would find the checkout's own `lagwatch.egg-info` and call the wheel installed already."""
    return {k: v for k, v in os.environ.items() if k not in FOREIGN_ENV and not k.startswith("LAGWATCH_")}


def _try(command: list[str]) -> bool:
    return subprocess.run(command, capture_output=True, env=outside_environment()).returncode == 0


def _run(command: list[str], what: str) -> None:
    done = subprocess.run(command, capture_output=True, text=True, env=outside_environment())
    if done.returncode != 0:
        raise InstallError(f"{what} failed ({done.returncode}): {done.stdout[-2000:]}{done.stderr[-4000:]}")
