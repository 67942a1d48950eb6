"""docs/configuration.md: current, complete (every key of the model, under its section, and no
other), and every field documented.

The model is walked here on its own (`model_fields`, recursively), not through the renderer, so
a renderer that skips a section or invents a key is caught rather than agreed with.
"""

from __future__ import annotations

from typing import Any, get_args, get_origin

from pydantic import BaseModel

from harness.processes import ROOT
from lagwatch.config import Config, reference

DOC = ROOT / "docs" / "configuration.md"
STALE = "docs/configuration.md is stale: run `python -m lagwatch.config.reference`"


def doc_text() -> str:
    return DOC.read_text(encoding="utf-8")


def section_model(annotation: Any) -> tuple[type[BaseModel] | None, bool]:
    """(model, is an array of tables) for a field that is a section of its own."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation, False
    (item,) = get_args(annotation) if get_origin(annotation) is list else (None,)
    if isinstance(item, type) and issubclass(item, BaseModel):
        return item, True
    return None, False


def model_sections(
    model: type[BaseModel] = Config, path: tuple[str, ...] = (), array: bool = False
) -> dict[str, list[tuple[type[BaseModel], str, str]]]:
    """TOML header → (model, attribute, key as written) of every key the file may set there.

    Fields with ``exclude=True`` (`source_path`) are set by the loader, never read from the file.
    """
    dotted = ".".join(path)
    header = "Top level" if not path else f"[[{dotted}]]" if array else f"[{dotted}]"
    found = {header: []}
    for name, field in model.model_fields.items():
        if field.exclude:
            continue
        key = field.alias or name
        found[header].append((model, name, key))
        child, child_array = section_model(field.annotation)
        if child is not None:
            found.update(model_sections(child, (*path, key), child_array))
    return found


def doc_sections(text: str) -> dict[str, set[str]]:
    """Heading → the keys of the table under it, as the doc shows them."""
    found: dict[str, set[str]] = {}
    heading = None
    for line in text.splitlines():
        if line.startswith("## "):
            heading = line.removeprefix("## ").strip().strip("`")
            found[heading] = set()
        elif heading is not None and line.startswith("| `"):
            found[heading].add(line.split("|")[1].strip().strip("`"))
    return found


def test_the_doc_is_rendered_from_the_current_model():
    assert reference.render() == doc_text(), STALE


def test_every_key_of_the_model_is_in_the_doc_under_its_section_and_no_other():
    expected = {header: {key for _, _, key in keys} for header, keys in model_sections().items()}
    shown = doc_sections(doc_text())
    missing = sorted(f"{h} {k}" for h, keys in expected.items() for k in keys - shown.get(h, set()))
    unknown = sorted(f"{h} {k}" for h, keys in shown.items() for k in keys - expected.get(h, set()))
    assert not missing, f"keys of the model missing from the doc: {missing}; {STALE}"
    assert not unknown, f"keys in the doc the model does not have: {unknown}; {STALE}"
    assert set(shown) == set(expected), f"sections differ: {sorted(set(shown) ^ set(expected))}; {STALE}"


def test_every_field_has_a_meaning():
    fields = {(model, name) for keys in model_sections().values() for model, name, _ in keys}
    undocumented = sorted(f"{model.__name__}.{name}" for model, name in fields if not reference.meaning(model, name))
    assert not undocumented, f"fields without a meaning (add a `#:` comment above each): {undocumented}"


def test_environment_column_names_the_variables_the_code_reads():
    text = doc_text()
    for variable in (
        "`LAGWATCH_CLUSTER_SASL_PASSWORD`",
        "`LAGWATCH_CLUSTER_<NAME>_SASL_PASSWORD`",
        "`LAGWATCH_TRANSPORT_SASL_PASSWORD`",
        "`LAGWATCH_BOOTSTRAP_SERVERS`",
        "`LAGWATCH_API_TOKEN`",
        "`LAGWATCH_DASHBOARD_OIDC_CLIENT_SECRET`",
        "`LAGWATCH_DASHBOARD_COOKIE_SECRET`",
        "`$LAGWATCH_CONFIG`",
    ):
        assert variable in text, f"{variable} not in docs/configuration.md"
    assert reference.named_cluster_variable("sasl.password") == "LAGWATCH_CLUSTER_<NAME>_SASL_PASSWORD"
    assert reference.environ_assignments()["cluster.bootstrap_servers"] == "LAGWATCH_BOOTSTRAP_SERVERS"
