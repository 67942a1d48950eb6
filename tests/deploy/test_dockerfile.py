"""What the image is built from, checked without building it (tests/deploy/test_image.py builds
and runs it): the build context lets in every package pyproject.toml ships and the files the
build reads, and the dependency layer installs exactly the runtime pins, no test tools."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: Read by the build besides the packages: the wheel's metadata and the runtime pins.
BUILD_INPUTS = ("pyproject.toml", "README.md", "LICENSE", "requirements.txt", "scripts/runtime-requirements.py")


def allowed() -> set[str]:
    """The paths .dockerignore lets back in (`!path`) after excluding everything."""
    lines = [line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()]
    assert "*" in lines, ".dockerignore must start from nothing (`*`) so local folders never reach the build"
    return {line[1:] for line in lines if line.startswith("!")}


def test_the_build_context_holds_every_shipped_package_and_build_input() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    packages = {name.rstrip("*") for name in pyproject["tool"]["setuptools"]["packages"]["find"]["include"]}
    missing = (packages | set(BUILD_INPUTS) | set(pyproject["project"].get("license-files", []))) - allowed()
    assert not missing, f".dockerignore keeps {sorted(missing)} out of the build: add a `!name` line for each"


def test_runtime_requirements_are_the_pinned_dependencies_without_test_tools() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "runtime-requirements.py")], capture_output=True, text=True, check=True
    )
    lines = done.stdout.split()
    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert len(lines) == len(dependencies), lines
    assert all(re.fullmatch(r"[A-Za-z0-9_.-]+==[^=\s]+", line) for line in lines), lines
    pinned = {line for line in (ROOT / "requirements.txt").read_text().splitlines()}
    assert set(lines) <= pinned, "every runtime line is requirements.txt's own pin"
    assert not {name.split("==")[0].lower() for name in lines} & {"pytest", "ruff", "playwright", "jsonschema"}


def test_the_image_reads_its_config_from_the_volume_it_runs_in() -> None:
    """Relative paths in a config resolve against its folder: config, lake and state share the volume."""
    dockerfile = (ROOT / "Dockerfile").read_text()
    (volume,) = re.findall(r'^VOLUME \["([^"]+)"\]', dockerfile, re.M)
    (workdir,) = re.findall(r"^WORKDIR (\S+)", dockerfile.split("FROM ")[-1], re.M)
    (config,) = re.findall(r"LAGWATCH_CONFIG=(\S+)", dockerfile)
    assert volume == workdir == str(Path(config).parent)
    assert re.search(r"^USER lagwatch$", dockerfile, re.M) and "HEALTHCHECK" in dockerfile
