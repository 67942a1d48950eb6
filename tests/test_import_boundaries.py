"""The floors of the house, kept by reading every import with `ast`.

- `lagwatch/` (ground floor) holds the contracts every part shares and imports no other
  package of this project.
- Parts (collectors, spark_jobs, alerts, dashboard, api) each run as their own process and
  import only themselves and `lagwatch`: an import across parts would tie their releases and
  start-up together and hide a contract in someone's internals.
- `shell/` (the CLI, `up`, the embedded broker, the demo) starts and wires the parts, so it may
  import any of them by name, but never by an import string ("module:function").
- `harness/` (real services for tests and benches) and `bench/` stand above the product;
  nothing outside `tests/` imports `tests`, and no bench reaches a private (`_name`) of another
  module: what a bench measures is a public name.

Imports are read wherever they stand (module level, inside functions, under TYPE_CHECKING):
plain and `from` imports, relative imports resolved against the file's package, and the string
literal given to `importlib.import_module`, `__import__` or `importlib.util.find_spec`. A string
literal anywhere that names a module of a part ("alerts.engine", "collectors.runner:run") is an
import string and is refused too.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PARTS = ("collectors", "spark_jobs", "alerts", "dashboard", "api")
CONTRACTS = "lagwatch"
SHELL = "shell"
HARNESS = "harness"
BENCH = "bench"
TESTS = "tests"
#: Folders scanned for import strings and for `import tests`: everything but tests/ itself.
PRODUCT_AND_ABOVE = (*PARTS, CONTRACTS, SHELL, HARNESS, BENCH)
#: Calls whose first argument, a string literal, names a module to import or locate.
#: A module path, optionally with ":function" (what `importlib` loaders are given).
IMPORT_STRING = re.compile(r"([A-Za-z_][\w.]*)(?::[A-Za-z_]\w*)?")
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
    return frozenset({*found, *PARTS, CONTRACTS, SHELL, HARNESS, BENCH, TESTS})


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


def module_names(root: Path, packages: tuple[str, ...]) -> frozenset[str]:
    """Dotted names of every module and package under `packages` (e.g. "alerts.engine")."""
    names = set()
    for package in packages:
        for path in (root / package).rglob("*.py"):
            parts = path.relative_to(root).with_suffix("").parts
            names.add(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return frozenset(names)


def import_strings(folder: str, root: Path = ROOT) -> list[Import]:
    """String literals under `folder` that name a part's module, alone or as "module:function"."""
    modules = module_names(root, PARTS) - set(PARTS)
    found = []
    for path in sorted((root / folder).rglob("*.py")):
        file = path.relative_to(root).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=file)):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and _names_module(node.value, modules):
                found.append(Import(file, node.lineno, node.value))
    return found


def _names_module(text: str, modules: frozenset[str]) -> bool:
    """ "alerts.engine" or "alerts.engine:run"; a message that starts with a config key does not count."""
    match = IMPORT_STRING.fullmatch(text)
    return bool(match) and match.group(1) in modules


def private_reaches(folder: str, root: Path = ROOT) -> list[Import]:
    """`from m import _x` and `something._x` (not on self or cls) under `folder`."""
    found = []
    for path in sorted((root / folder).rglob("*.py")):
        file = path.relative_to(root).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=file)):
            if isinstance(node, ast.ImportFrom):
                found += [Import(file, node.lineno, f"{node.module}.{a.name}") for a in node.names if _private(a.name)]
            elif isinstance(node, ast.Attribute) and _private(node.attr) and not _own(node.value):
                found.append(Import(file, node.lineno, ast.unparse(node)))
    return found


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _own(value: ast.expr) -> bool:
    return isinstance(value, ast.Name) and value.id in ("self", "cls")


@pytest.mark.parametrize("part", PARTS)
def test_a_part_imports_only_itself_and_lagwatch(part: str) -> None:
    bad = forbidden_imports(part, frozenset({part, CONTRACTS}))
    assert not bad, f"{part}/ may import only {part} and {CONTRACTS} of this project:\n" + "\n".join(map(str, bad))


def test_lagwatch_imports_no_other_package_of_the_project() -> None:
    bad = forbidden_imports(CONTRACTS, frozenset({CONTRACTS}))
    assert not bad, f"{CONTRACTS}/ holds the contracts and imports nothing above it:\n" + "\n".join(map(str, bad))


def test_the_shell_imports_the_product_only() -> None:
    bad = forbidden_imports(SHELL, frozenset({*PARTS, CONTRACTS, SHELL}))
    assert not bad, f"{SHELL}/ may import the parts and {CONTRACTS}, not tests or benches:\n" + "\n".join(map(str, bad))


@pytest.mark.parametrize("folder", [HARNESS, BENCH])
def test_harness_and_benches_never_import_tests(folder: str) -> None:
    bad = forbidden_imports(folder, frozenset({*PARTS, CONTRACTS, SHELL, HARNESS, BENCH}))
    assert not bad, f"{folder}/ may import the product, the shell and the harness:\n" + "\n".join(map(str, bad))


@pytest.mark.parametrize("folder", PRODUCT_AND_ABOVE)
def test_no_import_string_names_a_part(folder: str) -> None:
    bad = import_strings(folder)
    assert not bad, f"{folder}/ names a part's module in a string; import it by name:\n" + "\n".join(map(str, bad))


def test_no_bench_reaches_a_private_name() -> None:
    bad = private_reaches(BENCH)
    assert not bad, "a bench measures public names only:\n" + "\n".join(map(str, bad))


def test_the_scan_sees_imports_inside_functions_relative_ones_and_import_calls(tmp_path: Path) -> None:
    """The checks above pass only if the scan can see a violation; this shows it can."""
    seen = {i.module for i in imports_of(ROOT / "shell" / "cli.py")}
    assert {"alerts.engine", "alerts.rules"} <= seen  # both are imported inside functions

    for package in ("dashboard/views", "alerts", "lagwatch", "bench"):
        (tmp_path / package).mkdir(parents=True)
        (tmp_path / package / "__init__.py").write_text("")
    (tmp_path / "alerts" / "engine.py").write_text("")
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

    (tmp_path / "bench" / "bench_x.py").write_text(
        "import tests.harness\n"
        "from spark_jobs.rollups import _bucket\n"
        "COMMANDS = {'alerts': 'alerts.engine:run', 'key': 'alerts.group_wait'}\n"
        "def run(writer):\n"
        "    return writer._write(), writer.lake._rows, self._own\n"
    )
    assert [str(i) for i in forbidden_imports("bench", frozenset({BENCH}), root=tmp_path)] == [
        "bench/bench_x.py:1 imports tests.harness",
        "bench/bench_x.py:2 imports spark_jobs.rollups",
    ]
    assert [str(i) for i in import_strings("bench", root=tmp_path)] == ["bench/bench_x.py:3 imports alerts.engine:run"]
    assert sorted(str(i) for i in private_reaches("bench", root=tmp_path)) == [
        "bench/bench_x.py:2 imports spark_jobs.rollups._bucket",
        "bench/bench_x.py:5 imports writer._write",
        "bench/bench_x.py:5 imports writer.lake._rows",
    ]
