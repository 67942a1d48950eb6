"""The parts meet only through lagwatch/: no part imports another, and lagwatch/ imports none.

Parts: collectors, spark_jobs, alerts, dashboard, api. Each is its own process with its own
contracts (docs/architecture.md); an import across parts would tie their releases and start-up
together and hide a contract in someone's internals. So every .py file of a part may import
only its own part, `lagwatch`, the standard library and third-party packages. Imports are read
with `ast`, wherever they stand (module level, inside functions, under TYPE_CHECKING): plain
and `from` imports, relative imports resolved against the file's package, and the string
literal given to `importlib.import_module`, `__import__` or `importlib.util.find_spec`.

lagwatch/ holds the contracts and imports no part, with one exception that holds today:
`lagwatch/cli.py`, the one entry point, hands each sub-command to its part's `run` (the alert
engine by a plain import, the others by "module:function" strings). The stack launcher
(`lagwatch/stack.py`) starts parts only as `lagwatch <command>` subprocesses, so it needs no
exception. Tests and benches (tests/, bench/) are not parts and are not checked; a part must not
import them either.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PARTS = ("collectors", "spark_jobs", "alerts", "dashboard", "api")
CONTRACTS = "lagwatch"
#: lagwatch/ modules allowed to import parts: the CLI dispatches each sub-command to its part.
STARTS_PARTS = frozenset({"lagwatch/cli.py"})
#: Calls whose first argument, a string literal, names a module to import or locate.
IMPORTING_CALLS = frozenset({"import_module", "__import__", "find_spec"})


@dataclass(frozen=True)
class Import:
    file: str
    line: int
    module: str

    @property
    def top(self) -> str:
        return self.module.split(".")[0]

    def __str__(self) -> str:
        return f"{self.file}:{self.line} imports {self.module}"


def project_packages(root: Path) -> frozenset[str]:
    """Top-level packages of this repository: importing one is never third-party."""
    found = {p.parent.name for p in root.glob("*/__init__.py")}
    return frozenset({*found, *PARTS, CONTRACTS})


def _resolve_relative(package: list[str], level: int, module: str | None) -> str:
    """`from ..x import y` in package a.b is a.x: each dot past the first goes one package up."""
    base = package[: len(package) - level + 1]
    return ".".join([*base, *([module] if module else [])])


def _called_name(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def imports_of(path: Path, root: Path = ROOT) -> Iterator[Import]:
    """Every module `path` imports, by statement or by a literal name given to an import call."""
    file = path.relative_to(root).as_posix()
    package = list(path.relative_to(root).parent.parts)
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=file)):
        if isinstance(node, ast.Import):
            yield from (Import(file, node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                yield Import(file, node.lineno, _resolve_relative(package, node.level, node.module))
            elif node.module:
                yield Import(file, node.lineno, node.module)
        elif isinstance(node, ast.Call) and _called_name(node) in IMPORTING_CALLS and node.args:
            first = node.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                yield Import(file, node.lineno, first.value)


def forbidden_imports(
    folder: str, allowed: frozenset[str], exempt: frozenset[str] = frozenset(), root: Path = ROOT
) -> list[Import]:
    """Imports of project packages outside `allowed` made by .py files under `folder`."""
    project = project_packages(root)
    bad = []
    for path in sorted((root / folder).rglob("*.py")):
        if path.relative_to(root).as_posix() in exempt:
            continue
        bad += [i for i in imports_of(path, root) if i.top in project and i.top not in allowed]
    return bad


@pytest.mark.parametrize("part", PARTS)
def test_a_part_imports_only_itself_and_lagwatch(part: str) -> None:
    bad = forbidden_imports(part, frozenset({part, CONTRACTS}))
    assert not bad, f"{part}/ may import only {part} and {CONTRACTS} of this project:\n" + "\n".join(map(str, bad))


def test_lagwatch_imports_no_part_except_the_cli() -> None:
    bad = forbidden_imports(CONTRACTS, frozenset({CONTRACTS}), exempt=STARTS_PARTS)
    message = f"{CONTRACTS}/ holds the contracts; only {', '.join(sorted(STARTS_PARTS))} may import a part:\n"
    assert not bad, message + "\n".join(map(str, bad))


def test_the_scan_sees_imports_inside_functions_relative_ones_and_import_calls(tmp_path: Path) -> None:
    """The checks above pass only if the scan can see a violation; this shows it can."""
    seen = {i.module for i in imports_of(ROOT / "lagwatch" / "cli.py")}
    assert {"alerts.engine", "alerts.rules"} <= seen  # both are imported inside functions

    for package in ("dashboard/views", "alerts", "lagwatch"):
        (tmp_path / package).mkdir(parents=True)
        (tmp_path / package / "__init__.py").write_text("")
    (tmp_path / "dashboard" / "views" / "page.py").write_text(
        "import importlib\n"
        "from .. import queries\n"
        "from ...alerts import engine\n"
        "from lagwatch import config\n"
        "def load():\n"
        "    from collectors.runner import run\n"
        "    return importlib.import_module('api.server'), run, importlib.util.find_spec('pandas')\n"
    )
    found = {str(i) for i in forbidden_imports("dashboard", frozenset({"dashboard", CONTRACTS}), root=tmp_path)}
    page = "dashboard/views/page.py"
    assert found == {f"{page}:3 imports alerts", f"{page}:6 imports collectors.runner", f"{page}:7 imports api.server"}
