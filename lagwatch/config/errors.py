"""Validation errors phrased for the operator: one line per bad key, each named as written in
the file (a list item by its `name`), under the file's path."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError


def format_validation_error(exc: ValidationError, path: str, data: dict[str, Any]) -> str:
    """Every error of `exc`, with its key as in `data` (the mapping read from `path`)."""
    lines = [f"invalid configuration in {path}:"]
    for err in exc.errors():
        key = key_name(err["loc"], data)
        if not err["loc"]:  # a whole-config rule: its message names the keys
            lines.append(f"  {err['msg'].removeprefix('Value error, ')}")
        elif err["type"] == "extra_forbidden":
            lines.append(f"  {key}: unknown key")
        else:
            lines.append(f"  {key}: {err['msg'].removeprefix('Value error, ')}")
    return "\n".join(lines)


def key_name(loc: tuple[int | str, ...], data: dict[str, Any]) -> str:
    """Dotted key; a list item is named by its `name` the way rule errors are (alerts.rules 'LagHigh': for)."""
    key = ""
    node: Any = data
    for part in loc:
        node = node[part] if isinstance(node, dict | list) and _has(node, part) else None
        if isinstance(part, int) and isinstance(node, dict) and isinstance(node.get("name"), str):
            key += f" {node['name']!r}:"
        elif isinstance(part, int):
            key += f"[{part}]"
        else:
            key += (" " if key.endswith(":") else "." if key else "") + part
    return key.rstrip(":") or "(top level)"


def _has(node: dict[str, Any] | list[Any], part: int | str) -> bool:
    if isinstance(node, dict):
        return part in node
    return isinstance(part, int) and 0 <= part < len(node)
