"""YAML files read with podman-compose's own parser (its python3-yaml): no YAML library is in
the project's virtualenv, and `make test-system-deps` installs podman-compose for these tests."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

_TO_JSON = "import json, sys, yaml; json.dump(yaml.safe_load(open(sys.argv[1], encoding='utf-8')), sys.stdout)"


def yaml_python() -> str:
    """The interpreter podman-compose runs on (its shebang), which has the yaml module it needs."""
    compose = shutil.which("podman-compose")
    if compose is None:
        pytest.fail("podman-compose is not installed: `make test-system-deps` installs it")
    shebang = Path(compose).read_text(encoding="utf-8").splitlines()[0]
    return shebang.removeprefix("#!").strip().split()[0]


def load_yaml(path: Path) -> Any:
    done = subprocess.run([yaml_python(), "-c", _TO_JSON, str(path)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"{path} is not valid YAML: {done.stderr}"
    return json.loads(done.stdout)
