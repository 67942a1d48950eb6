"""The configuration reference, docs/configuration.md, rendered from the config model itself.

Why generated: a hand-kept list of keys drifts from the model the day someone adds a key, and
an operator trusting a stale reference writes a key the loader refuses. Here every key comes from
`Config` (walked down through its sections and list entries), its meaning from the `#:` comments
above the field in the source (or a pydantic ``description``), and its environment variables from
the constants `lagwatch.config.secrets` defines and `lagwatch.config.env` reads. ``python -m
lagwatch.config.reference`` rewrites the file; tests/lagwatch/test_config_reference.py fails when
it is stale, when a key is missing, or when a field has no meaning.
"""

from __future__ import annotations

import ast
import inspect
import json
import re
import sys
import textwrap
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import NoneType, UnionType
from typing import Any, Literal, Union, get_args, get_origin

import annotated_types
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from lagwatch import exit_codes
from lagwatch.config import env
from lagwatch.config.base import _UNIT_SECONDS, Duration, OptionalDuration
from lagwatch.config.legacy import RUN_ALERTS_DEPRECATED
from lagwatch.config.load import CONFIG_ENV_VAR, DEFAULT_CONFIG_PATH
from lagwatch.config.model import Config
from lagwatch.config.secrets import (
    API_TOKEN_ENV,
    DASHBOARD_CLIENT_SECRET_ENV,
    DASHBOARD_COOKIE_SECRET_ENV,
    ENV_CLIENT_KEYS,
    SECRET_CLIENT_KEYS,
    client_env_var,
    cluster_env_prefix,
    named_cluster_env_var,
)

DOC_PATH = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"
#: The heading of the table of top-level keys (the sections themselves).
TOP_LEVEL = "Top level"
#: How a cluster's name appears in a per-cluster variable of the reference.
NAME_PLACEHOLDER = "<NAME>"
#: Default cells that are words, not TOML values (so they are not shown as code).
REQUIRED, UNSET, SECTION_DEFAULTS = "required", "unset", "its keys' defaults"


@dataclass(frozen=True)
class Row:
    """One key of a section, as the reference shows it (plain text; escaped when rendered)."""

    key: str
    type: str
    default: str
    meaning: str
    environment: str


@dataclass(frozen=True)
class Section:
    """One table of the reference: `[cluster]`, `[[clusters]]`, … (TOP_LEVEL for the root)."""

    header: str
    intro: str
    rows: tuple[Row, ...]


# -- reading the model ---------------------------------------------------------------------------


def config_fields(model: type[BaseModel]) -> list[tuple[str, str, FieldInfo]]:
    """(attribute, key as written in the file, field) of every key the file may set.

    A field with ``exclude=True`` (`Config.source_path`) is filled in by the loader, not read
    from the file, so it is no key of the reference.
    """
    return [(name, field.alias or name, field) for name, field in model.model_fields.items() if not field.exclude]


def nested_model(annotation: Any) -> tuple[type[BaseModel] | None, bool]:
    """(section model, whether it is an array of tables) when `annotation` is a section, else (None, False)."""
    if _is_model(annotation):
        return annotation, False
    if get_origin(annotation) is list and _is_model(get_args(annotation)[0]):
        return get_args(annotation)[0], True
    return None, False


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def meaning(model: type[BaseModel], name: str) -> str:
    """The field's pydantic description, else its `#:` comment; "" when it has neither (a test fails then)."""
    description = model.model_fields[name].description
    if description:
        return " ".join(description.split())
    comments = (field_comments(k).get(name, "") for k in model.__mro__ if _is_model(k) and k is not BaseModel)
    return next((comment for comment in comments if comment), "")


@cache
def field_comments(klass: type) -> dict[str, str]:
    """`#:` comment lines right above each annotated assignment of `klass`'s body, by attribute name.

    Read from the source because comments reach neither the AST nor the running model; a field
    with no comment maps to "", so `meaning` looks further up the class's bases.
    """
    lines, _ = inspect.getsourcelines(klass)
    (class_def,) = ast.parse(textwrap.dedent("".join(lines))).body
    assert isinstance(class_def, ast.ClassDef)
    return {
        node.target.id: _comment_above(lines, node.lineno - 1)
        for node in class_def.body
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
    }


def _comment_above(lines: list[str], index: int) -> str:
    """The `#:` lines immediately above line `index` (0-based), joined into one sentence."""
    parts: list[str] = []
    while index > 0 and lines[index - 1].strip().startswith("#:"):
        index -= 1
        parts.insert(0, lines[index].strip().removeprefix("#:").strip())
    return " ".join(parts)


def class_intro(model: type[BaseModel]) -> str:
    """The model's own docstring, one paragraph; "" for a class without one (pydantic's is not its own)."""
    doc = model.__dict__.get("__doc__")
    return " ".join(inspect.cleandoc(doc).split()) if doc else ""


# -- types and defaults as written in TOML ----------------------------------------------------------

_SCALARS = {str: "string", int: "integer", float: "number", bool: "boolean", Any: "any"}


def type_text(field: FieldInfo) -> str:
    """The field's type in TOML words, with its bounds: `integer (≥ 1, ≤ 65535)`, `duration`."""
    bounds = _bounds(field)
    return _annotation_text(field.annotation, field) + (f" ({', '.join(bounds)})" if bounds else "")


def _annotation_text(annotation: Any, field: FieldInfo | None = None) -> str:
    if field is not None and _marked(field, OptionalDuration):
        return 'duration or ""'
    if field is not None and _marked(field, Duration):
        return "duration"
    origin, args = get_origin(annotation), get_args(annotation)
    if origin in (Union, UnionType):
        present = [a for a in args if a is not NoneType]
        return " or ".join(_annotation_text(a) for a in present) + (", optional" if NoneType in args else "")
    if origin is Literal:
        return " | ".join(json.dumps(a) for a in args)
    if origin is list:
        return f"array of {_annotation_text(args[0])}"
    if origin is dict:
        return f"table of {_annotation_text(args[1])}"
    if _is_model(annotation):
        return "table"
    return _SCALARS.get(annotation, getattr(annotation, "__name__", str(annotation)))


def _marked(field: FieldInfo, alias: Any) -> bool:
    """Whether `field` was declared with the Annotated alias `alias` (its validators are in the metadata)."""
    marks = get_args(alias)[1:]
    return bool(marks) and all(mark in field.metadata for mark in marks)


def _bounds(field: FieldInfo) -> list[str]:
    """The field's numeric and length constraints, said the way the loader enforces them."""
    signs = {"gt": ">", "ge": "≥", "lt": "<", "le": "≤"}
    bounds: list[str] = []
    for mark in field.metadata:
        bounds += [f"{sign} {toml_value(getattr(mark, attr))}" for attr, sign in signs.items() if hasattr(mark, attr)]
        if isinstance(mark, annotated_types.MinLen) and mark.min_length == 1:
            bounds.append("non-empty")
    return bounds


def default_text(field: FieldInfo) -> str:
    """The default as a TOML value; "required" when the key must be written, "unset" for None."""
    if field.default_factory is not None:
        return toml_value(field.default_factory())  # type: ignore[call-arg]
    if field.default is PydanticUndefined:
        return REQUIRED
    return UNSET if field.default is None else toml_value(field.default)


def toml_value(value: Any) -> str:
    """`value` written as TOML would have it (a model as an inline table of what differs from its defaults)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, BaseModel):
        return toml_value(value.model_dump(by_alias=True, exclude_defaults=True))
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_toml_key(k)} = {toml_value(v)}" for k, v in value.items()) + "}"
    return repr(value)


def _toml_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else json.dumps(key)


# -- environment variables -----------------------------------------------------------------------


def named_cluster_variable(key: str) -> str:
    """`named_cluster_env_var` with the cluster's name left as NAME_PLACEHOLDER."""
    sample = "NAME"
    placeholder_prefix = cluster_env_prefix(sample).replace(sample, NAME_PLACEHOLDER)
    return named_cluster_env_var(sample, key).replace(cluster_env_prefix(sample), placeholder_prefix)


def environ_assignments() -> dict[str, str]:
    """`config.a.b = environ["LAGWATCH_X"]` in `env.apply_env`, as {"a.b": "LAGWATCH_X"}.

    Read from the code, so an override added there shows up here without being retyped.
    """
    found: dict[str, str] = {}
    for node in ast.walk(ast.parse(inspect.getsource(env.apply_env))):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            path, variable = _attribute_path(node.targets[0]), _environ_key(node.value)
            if path and path[0] == "config" and variable:
                found[".".join(path[1:])] = variable
    return found


def _attribute_path(node: ast.expr) -> list[str]:
    """config.cluster.bootstrap_servers → ["config", "cluster", "bootstrap_servers"]; [] for anything else."""
    if isinstance(node, ast.Attribute):
        base = _attribute_path(node.value)
        return [*base, node.attr] if base else []
    return [node.id] if isinstance(node, ast.Name) else []


def _environ_key(node: ast.expr) -> str:
    """The variable of `environ["LAGWATCH_X"]`; "" for any other expression."""
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == "environ":
        key = node.slice
        return key.value if isinstance(key, ast.Constant) and isinstance(key.value, str) else ""
    return ""


@cache
def environment() -> dict[tuple[str, str], str]:
    """(section header, key) → the variables that set that key, as the environment column says them.

    Secrets that are no key of the file (the dashboard's, the API's) sit on the `auth` row that demands them.
    """
    one_cluster = ", ".join(f"`{client_env_var('cluster', k)}`" for k in ENV_CLIENT_KEYS)
    per_cluster = ", ".join(f"`{named_cluster_variable(k)}`" for k in ENV_CLIENT_KEYS)
    table = {
        ("[cluster]", "client"): f"{one_cluster}; {per_cluster} (wins)",
        ("[[clusters]]", "client"): f"{per_cluster}; with a single entry also {one_cluster}",
        ("[transport]", "client"): ", ".join(f"`{client_env_var('transport', k)}`" for k in ENV_CLIENT_KEYS),
        ("[dashboard]", "auth"): f'`{DASHBOARD_CLIENT_SECRET_ENV}`, `{DASHBOARD_COOKIE_SECRET_ENV}` (auth = "oidc")',
        ("[api]", "auth"): f'`{API_TOKEN_ENV}` (auth = "token")',
    }
    for path, variable in environ_assignments().items():
        section, _, key = path.rpartition(".")
        table[(f"[{section}]", key)] = f"`{variable}`"
        if section == "cluster":  # env.py sets the first cluster's only when there is one
            table[("[[clusters]]", key)] = f"`{variable}` (a single entry only)"
    return table


# -- walking the model into sections ----------------------------------------------------------------


def sections() -> list[Section]:
    """Every table of the reference, depth first: the top level, then each section and its sub-tables."""
    found: list[Section] = []
    _walk(Config, (), False, "Every section of the file; each has its table below.", found)
    return found


def _walk(model: type[BaseModel], path: tuple[str, ...], array: bool, intro: str, found: list[Section]) -> None:
    header = header_of(path, array)
    rows: list[Row] = []
    children: list[tuple[type[BaseModel], tuple[str, ...], bool, str]] = []
    for name, key, field in config_fields(model):
        child, child_array = nested_model(field.annotation)
        child_header = header_of((*path, key), child_array) if child is not None else None
        rows.append(_row(header, model, name, key, field, child_header))
        if child is not None:
            children.append((child, (*path, key), child_array, meaning(model, name)))
    found.append(Section(header, class_intro(model) or intro, tuple(rows)))
    for child, child_path, child_array, child_intro in children:
        _walk(child, child_path, child_array, child_intro, found)


def header_of(path: tuple[str, ...], array: bool) -> str:
    """The TOML header of the table at `path`: `[a.b]`, or `[[a.b]]` for an array of tables."""
    if not path:
        return TOP_LEVEL
    return f"[[{'.'.join(path)}]]" if array else f"[{'.'.join(path)}]"


def _row(header: str, model: type[BaseModel], name: str, key: str, field: FieldInfo, child: str | None) -> Row:
    """One key's row; a sub-table's row points at its own table (`child`) instead of listing a type."""
    if child:
        kind = "array of tables" if child.startswith("[[") else "table"
        default = default_text(field) if kind == "array of tables" else SECTION_DEFAULTS
        return Row(key, f"{kind}, see {child}", default, meaning(model, name), "")
    return Row(key, type_text(field), default_text(field), meaning(model, name), environment().get((header, key), ""))


# -- markdown ------------------------------------------------------------------------------------


def anchor(header: str) -> str:
    """GitHub's anchor of a heading whose text is `header` (in backticks)."""
    return re.sub(r"[^a-z0-9 _-]", "", header.lower()).replace(" ", "-")


def text_cell(text: str) -> str:
    """Prose in a table cell: `<` outside code spans escaped (else "<token>" vanishes as HTML), pipes escaped."""
    spans = text.replace("``", "`").split("`")
    spans[::2] = [s.replace("<", "&lt;").replace(">", "&gt;") for s in spans[::2]]
    return "`".join(spans).replace("|", "\\|")


def code_cell(text: str) -> str:
    return f"`{text}`".replace("|", "\\|") if text else ""


def linked(text: str) -> str:
    """A type cell: section headers named in it become links to their tables."""
    match = re.search(r"see (\[.+\])$", text)
    if not match:
        return code_cell(text)
    header = match.group(1)
    return f"{text[: match.start()]}see [`{header}`](#{anchor(header)})"


def section_markdown(section: Section) -> str:
    title = section.header if section.header == TOP_LEVEL else f"`{section.header}`"
    lines = [f"## {title}", "", text_cell(section.intro), "", "| key | type | default | meaning | environment |"]
    lines.append("|---|---|---|---|---|")
    for row in section.rows:
        default = row.default if row.default in (REQUIRED, UNSET, SECTION_DEFAULTS) else code_cell(row.default)
        cells = [code_cell(row.key), linked(row.type), default, text_cell(row.meaning)]
        lines.append("| " + " | ".join([*cells, row.environment.replace("|", "\\|")]) + " |")
    return "\n".join(lines)


def intro() -> str:
    """What holds for every key: which file, unknown keys, durations, secrets, moved keys."""
    units = ", ".join(f"`{u}`" for u in _UNIT_SECONDS)
    secrets = ", ".join(f"`{k}`" for k in sorted(SECRET_CLIENT_KEYS))
    return f"""# Configuration reference

<!-- generated by `python -m lagwatch.config.reference` from lagwatch/config/:
     edit the model's `#:` comments, not this file -->

Every Lagwatch process reads one TOML file, validated as a whole before the command does anything.

- **Which file**: `--config PATH` (before or after the sub-command), else `${CONFIG_ENV_VAR}`, else
  `./{DEFAULT_CONFIG_PATH}`. A file named by `--config` or `${CONFIG_ENV_VAR}` must exist; when
  `./{DEFAULT_CONFIG_PATH}` is absent the built-in defaults below are used, with a warning saying so.
- **Unknown keys are refused**, in every section: the command exits with code {exit_codes.BAD_INPUT}
  and names the file and the key (`collect.intreval_s: unknown key`), because a silently ignored key
  is how monitoring quietly stops monitoring. A bad value is refused the same way.
- **Units**: a key ending in `_s` is a number of seconds (`_ms` milliseconds, `_hours` hours, `_days`
  days). A key of type `duration` is a string: a number and a unit ({units}), parts written
  one after the other (`"90s"`, `"2m"`, `"1h30m"`), or `"0"`.
- **Secrets never live in the file**: they come from `LAGWATCH_…` environment variables (the
  environment column), merged in after the file is validated; a secret written in the file
  (the client properties {secrets}, or the dashboard's and the API's secrets) is refused with the
  variable it belongs in. In a
  per-cluster variable, `{NAME_PLACEHOLDER}` is the cluster's `name` upper-cased with every character but A-Z
  and 0-9 as `_` (`prod-eu`: `{cluster_env_prefix("prod-eu")}…`).
- **One cluster or many**: `[cluster]` for one, or `[[clusters]]` entries for many, never both.
- **Moved keys** are still read, with a warning: {RUN_ALERTS_DEPRECATED}.
"""


def render() -> str:
    """The whole of docs/configuration.md."""
    return intro() + "".join(f"\n{section_markdown(s)}\n" for s in sections())


def missing_meanings() -> list[str]:
    """`[section] key` of every field without a meaning, so `main` can say what to document."""
    return [f"{s.header} {r.key}" for s in sections() for r in s.rows if not r.meaning]


def main() -> int:
    """Rewrite docs/configuration.md; non-zero (after writing) while a field has no meaning."""
    DOC_PATH.write_text(render(), encoding="utf-8")
    print(f"wrote {DOC_PATH}")
    missing = missing_meanings()
    for where in missing:
        print(f"no meaning: {where} (add a `#:` comment above the field)", file=sys.stderr)
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
