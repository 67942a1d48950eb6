"""Reading the configuration: which file, TOML parsing, validation with operator-phrased
errors, and the environment merged in."""

from __future__ import annotations

import logging
import os
import tomllib
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from lagwatch.config.base import ConfigError
from lagwatch.config.env import apply_env
from lagwatch.config.errors import format_validation_error
from lagwatch.config.model import Config

#: The package's one logger name, so operators filter every config message the same way.
log = logging.getLogger("lagwatch.config")

DEFAULT_CONFIG_PATH = "config.toml"
CONFIG_ENV_VAR = "LAGWATCH_CONFIG"


def parse_config(data: dict[str, Any], path: str = "<memory>", environ: dict[str, str] | None = None) -> Config:
    """Validate a config mapping; raise ConfigError naming the file and every bad key."""
    try:
        config = Config.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(format_validation_error(exc, path, data)) from None
    config.source_path = path if path != "<memory>" else ""
    apply_env(config, dict(os.environ) if environ is None else environ)
    return config


def load_config(path: str | os.PathLike[str] | None = None) -> Config:
    """Load `path`, else $LAGWATCH_CONFIG, else ./config.toml (defaults, said out loud, if that is absent)."""
    explicit = path is not None or CONFIG_ENV_VAR in os.environ
    chosen = str(path) if path is not None else os.environ.get(CONFIG_ENV_VAR, DEFAULT_CONFIG_PATH)
    file = Path(chosen)
    if not file.exists():
        if explicit:
            raise ConfigError(f"config file not found: {chosen}")
        return _defaults(file)
    try:
        data = tomllib.loads(file.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"invalid TOML in {chosen}: {exc}") from None
    return parse_config(data, str(file))


def _defaults(looked_for: Path) -> Config:
    """No ./config.toml: the built-in defaults, and a warning saying so and what that means."""
    config = parse_config({})
    cluster = (
        "no bootstrap servers, so Kafka commands start the embedded demo broker (tansu, in memory)"
        if config.embedded_broker
        else f"cluster {config.cluster.bootstrap_servers} (LAGWATCH_BOOTSTRAP_SERVERS)"
    )
    log.warning(
        "no config file at %s (pass --config PATH or set %s): using the built-in defaults: %s; lake in %s",
        looked_for.resolve(),
        CONFIG_ENV_VAR,
        cluster,
        Path(config.lake.path).resolve(),
    )
    return config
