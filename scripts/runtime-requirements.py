"""Print Lagwatch's runtime requirements, each at the version requirements.txt pins.

pyproject.toml names what Lagwatch needs to run (as ranges); requirements.txt pins those and the
test tools together. An install that only runs Lagwatch (the image, a host's virtualenv) wants the
pinned runtime set and no test tools, and in the image a list that changes only when a runtime pin
changes keeps the dependency layer cached across every other edit.

    python3 scripts/runtime-requirements.py > runtime.txt && pip install -r runtime.txt
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def project_name(requirement: str) -> str:
    """The normalised distribution name (PEP 503): 'prometheus_client==0.26' -> 'prometheus-client'."""
    raw = re.split(r"[\s<>=!~;\[@]", requirement.strip(), maxsplit=1)[0]
    return re.sub(r"[-_.]+", "-", raw).lower()


def pins(requirements: str) -> dict[str, str]:
    """Name -> its `name==version` line, from requirements.txt's text (comments and blanks skipped)."""
    lines = (line.split("#", 1)[0].strip() for line in requirements.splitlines())
    return {project_name(line): line for line in lines if "==" in line}


def runtime_requirements(pyproject: str, requirements: str) -> list[str]:
    """pyproject's dependencies, each replaced by its pin; a dependency without one is an error."""
    pinned = pins(requirements)
    wanted = tomllib.loads(pyproject)["project"]["dependencies"]
    missing = [dep for dep in wanted if project_name(dep) not in pinned]
    if missing:
        raise SystemExit(f"requirements.txt pins no version of {missing}: add a `name==version` line for each")
    return [pinned[project_name(dep)] for dep in wanted]


def main() -> None:
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    requirements = (ROOT / "requirements.txt").read_text(encoding="utf-8")
    sys.stdout.write("".join(f"{line}\n" for line in runtime_requirements(pyproject, requirements)))


if __name__ == "__main__":
    main()
