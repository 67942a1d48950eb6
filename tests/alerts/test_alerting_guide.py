"""docs/alerting.md's snippets work as written: an operator copies them into config.toml,
alertmanager.yml and prometheus.yml, so each one is checked by what will read it."""

from __future__ import annotations

import re
import subprocess
import textwrap
import tomllib
from pathlib import Path

from alerts.rules import compile_rules
from lagwatch.config import parse_config

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "alerting.md"
PROMETHEUS_YML = ROOT / "deploy" / "prometheus" / "prometheus.yml"


def blocks(language: str) -> list[str]:
    """The guide's fenced blocks of `language`, dedented (some sit inside a numbered list)."""
    found = re.findall(rf"^( *)```{language}\n(.*?)^\1```", GUIDE.read_text(encoding="utf-8"), re.M | re.S)
    return [textwrap.dedent(body) for _, body in found]


def test_every_toml_snippet_is_valid_config() -> None:
    snippets = blocks("toml")
    assert len(snippets) >= 3
    for snippet in snippets:
        config = parse_config(tomllib.loads(snippet), environ={})
        compile_rules(config.alerts)


def test_the_pagerduty_snippet_passes_amtool(tmp_path: Path) -> None:
    [snippet] = [b for b in blocks("yaml") if "pagerduty_configs" in b]
    assert "routing_key_file:" in snippet and "routing_key:" not in snippet, "the key comes from a file"
    path = tmp_path / "alertmanager.yml"
    path.write_text(snippet)
    done = subprocess.run(["amtool", "check-config", str(path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_alerting_block_is_the_shipped_one() -> None:
    [snippet] = [b for b in blocks("yaml") if b.startswith("alerting:")]
    assert snippet in PROMETHEUS_YML.read_text(encoding="utf-8")
