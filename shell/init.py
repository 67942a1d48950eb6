"""`lagwatch init`: write a commented starter config.toml for a real cluster.

Why a generator and not a copy of the shipped config.toml: that file is the local demo's (the
embedded broker). A real cluster needs its address, its security settings and the names of the
variables its secrets come from, which are easy to get wrong by hand. The values come from
flags, or from a short prompt for what is missing when a person is at a terminal. The text is
validated by the model every command loads before it is written, so what `init` writes is a
file Lagwatch accepts; secrets are never written, only the variables they come from (names
from `lagwatch.config`, so they cannot drift).
"""

from __future__ import annotations

import argparse
import json
import sys
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from lagwatch import exit_codes
from lagwatch.config import (
    DEFAULT_CONFIG_PATH,
    ENV_CLIENT_KEYS,
    CollectConfig,
    TransportConfig,
    client_env_var,
    parse_config,
)

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")
TLS_PROTOCOLS = ("SSL", "SASL_SSL")
DEFAULT_CLUSTER_NAME = "main"
MONITORED = "monitored"
SEPARATE = "separate:"

#: A question and its default -> the answer (the default when the answer is empty).
Ask = Callable[[str, str], str]


class InitError(Exception):
    """Input `init` cannot write a config from; the message names the flag (exit 2)."""


@dataclass(frozen=True)
class JmxEndpoint:
    host: str
    port: int


@dataclass(frozen=True)
class Answers:
    """Everything the starter file is rendered from."""

    bootstrap_servers: str
    cluster_name: str = DEFAULT_CLUSTER_NAME
    security_protocol: str = "PLAINTEXT"
    sasl_mechanism: str | None = None
    ssl_ca_location: str | None = None
    jmx: tuple[JmxEndpoint, ...] = ()
    #: Empty: the monitored cluster carries the samples and Lagwatch's own topics.
    transport_servers: str = ""


# -- flags --------------------------------------------------------------------------------------


def jmx_endpoint(text: str) -> JmxEndpoint:
    """`--jmx HOST:PORT`, refused by argparse (exit 2, the flag named) when malformed."""
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT with a port in 1-65535, got {text!r}")
    return JmxEndpoint(host, int(port))


def transport_choice(text: str) -> str:
    """`--transport`: `monitored`, or `separate:<bootstrap servers>` -> those servers ("" = monitored)."""
    if text == MONITORED:
        return ""
    if text.startswith(SEPARATE) and text[len(SEPARATE) :].strip():
        return text[len(SEPARATE) :].strip()
    raise argparse.ArgumentTypeError(f"expected 'monitored' or 'separate:<bootstrap servers>', got {text!r}")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The `init` flags; every one may be left out and asked for at a terminal."""
    parser.add_argument(
        "--bootstrap-servers", metavar="SERVERS", help="the monitored cluster, e.g. kafka1:9092,kafka2:9092"
    )
    parser.add_argument("--security-protocol", choices=SECURITY_PROTOCOLS, help="default: PLAINTEXT")
    parser.add_argument("--sasl-mechanism", choices=SASL_MECHANISMS, help="with SASL_PLAINTEXT or SASL_SSL")
    parser.add_argument(
        "--ssl-ca-location", metavar="FILE", help="CA certificate (PEM) of the brokers, with SSL or SASL_SSL"
    )
    parser.add_argument(
        "--jmx", action="append", type=jmx_endpoint, metavar="HOST:PORT", help="a broker's JMX endpoint (repeatable)"
    )
    parser.add_argument(
        "--transport",
        type=transport_choice,
        metavar="separate:SERVERS|monitored",
        help="where samples and Lagwatch's own topics live: a separate cluster (recommended) or the monitored one",
    )
    parser.add_argument("--cluster-name", metavar="NAME", help=f"default: {DEFAULT_CLUSTER_NAME}")
    parser.add_argument("--output", metavar="PATH", help="default: --config if given, else ./config.toml")
    parser.add_argument("--force", action="store_true", help="overwrite --output if it exists")
    parser.add_argument("--non-interactive", action="store_true", help="never prompt, even at a terminal")


# -- answers: flags first, then the prompt ------------------------------------------------------


def terminal_ask(question: str, default: str) -> str:
    """Ask on stderr (stdout stays free for scripts), read one line from stdin."""
    print(f"{question} [{default}]: " if default else f"{question}: ", end="", file=sys.stderr, flush=True)
    line = sys.stdin.readline()
    if not line:  # end of input: asking again would loop for ever
        raise InitError("no answer (end of input): pass the values as flags, see `lagwatch init --help`")
    return line.strip() or default


def gather(args: argparse.Namespace, ask: Ask | None) -> Answers:
    """The flags, with `ask` filling in what is missing (None: no terminal, or --non-interactive)."""
    servers = _bootstrap_servers(args, ask)
    name = args.cluster_name or _text(ask, "Cluster name", DEFAULT_CLUSTER_NAME)
    protocol = args.security_protocol or _choice(ask, "Security protocol", SECURITY_PROTOCOLS, "PLAINTEXT")
    return Answers(
        bootstrap_servers=servers,
        cluster_name=name,
        security_protocol=protocol,
        sasl_mechanism=_sasl_mechanism(args, ask, protocol),
        ssl_ca_location=_ssl_ca_location(args, ask, protocol),
        jmx=tuple(args.jmx or _jmx_answer(ask)),
        transport_servers=_transport_answer(args, ask),
    )


def _bootstrap_servers(args: argparse.Namespace, ask: Ask | None) -> str:
    """The one value without a default: asked until given, or exit 2 naming the flag."""
    if args.bootstrap_servers and args.bootstrap_servers.strip():
        return str(args.bootstrap_servers).strip()
    if ask is None:
        raise InitError("--bootstrap-servers is required without a terminal to ask on (e.g. kafka1:9092)")
    while not (servers := ask("Bootstrap servers of the cluster to monitor (e.g. kafka1:9092)", "").strip()):
        pass
    return servers


def _text(ask: Ask | None, question: str, default: str) -> str:
    return ask(question, default) if ask else default


def _choice(ask: Ask | None, question: str, choices: tuple[str, ...], default: str) -> str:
    """Asked again until the answer is one of `choices` (case does not matter)."""
    while True:
        answer = _text(ask, f"{question} ({' | '.join(choices)})", default).upper()
        if answer in choices:
            return answer
        print(f"  not one of {', '.join(choices)}", file=sys.stderr)


def _sasl_mechanism(args: argparse.Namespace, ask: Ask | None, protocol: str) -> str | None:
    if not protocol.startswith("SASL_"):
        if args.sasl_mechanism:
            raise InitError(f"--sasl-mechanism needs --security-protocol SASL_PLAINTEXT or SASL_SSL (not {protocol})")
        return None
    if args.sasl_mechanism:
        return str(args.sasl_mechanism)
    if ask is None:  # librdkafka would fall back to GSSAPI (Kerberos), which is rarely what is meant
        raise InitError(f"--sasl-mechanism is required with --security-protocol {protocol}")
    return _choice(ask, "SASL mechanism", SASL_MECHANISMS, "SCRAM-SHA-512")


def _ssl_ca_location(args: argparse.Namespace, ask: Ask | None, protocol: str) -> str | None:
    if protocol not in TLS_PROTOCOLS:
        if args.ssl_ca_location:
            raise InitError(f"--ssl-ca-location needs --security-protocol SSL or SASL_SSL (not {protocol})")
        return None
    return (
        args.ssl_ca_location or _text(ask, "CA certificate file of the brokers (empty: the system's CAs)", "") or None
    )


def _jmx_answer(ask: Ask | None) -> list[JmxEndpoint]:
    """Asked again until every endpoint parses (no terminal: none)."""
    while True:
        answer = _text(ask, "Broker JMX endpoints, HOST:PORT separated by commas (empty: none)", "")
        try:
            return [jmx_endpoint(item.strip()) for item in answer.split(",") if item.strip()]
        except argparse.ArgumentTypeError as exc:
            print(f"  {exc}", file=sys.stderr)


def _transport_answer(args: argparse.Namespace, ask: Ask | None) -> str:
    if args.transport is not None:
        return str(args.transport)
    question = "Bootstrap servers of a separate cluster for Lagwatch's own topics (empty: the monitored cluster)"
    return _text(ask, question, "").strip()


# -- rendering ----------------------------------------------------------------------------------


def toml_string(value: str) -> str:
    """A TOML basic string: JSON's escapes are TOML's, and ASCII-only output needs no encoding care."""
    return json.dumps(value)


def lagwatch_topics(answers: Answers) -> list[str]:
    """The topics Lagwatch creates on the transport cluster, named as the loaded config names them."""

    config = parse_config({"cluster": {"name": answers.cluster_name}}, environ={})
    return [
        f"{TransportConfig().samples_topic} (the samples)",
        f"{CollectConfig().coordination_topic} (collector coordination)",
        f"{config.alert_leader_topic} (alert-engine leader)",
    ]


def env_var(key: str) -> str:
    """The variable a [cluster.client] key is read from; only keys Lagwatch reads from the environment."""
    if key not in ENV_CLIENT_KEYS:
        raise ValueError(f"{key} is not set from the environment")
    return client_env_var("cluster", key)


def render(answers: Answers) -> str:
    """The whole file: sections in the order an operator reads them, each with why it is there."""
    parts = [
        _header(answers),
        _cluster(answers),
        _client(answers),
        _jmx(answers),
        _transport(answers),
        _the_rest(),
        _next_steps(answers),
    ]
    return "\n".join(part for part in parts if part).rstrip("\n") + "\n"


def _header(answers: Answers) -> str:
    return (
        f"# Lagwatch configuration for the Kafka cluster {answers.cluster_name!r}, written by `lagwatch init`.\n"
        "# Every key is validated: an unknown key or a bad value stops any command with exit code 2 and\n"
        "# names the key. Secrets never go in this file: each one is read from the environment variable\n"
        "# named beside its setting below (a secret written here is refused).\n"
    )


def _cluster(answers: Answers) -> str:
    return (
        "# The monitored cluster, read through the admin API (groups, offsets, topics). Whether it also\n"
        "# carries Lagwatch's own topics is [transport]'s choice, below.\n"
        "[cluster]\n"
        f"name = {toml_string(answers.cluster_name)}\n"
        f"bootstrap_servers = {toml_string(answers.bootstrap_servers)}\n"
    )


def _client(answers: Answers) -> str:
    """[cluster.client]: librdkafka settings as they are, and the variables of the secrets."""
    lines = ["# librdkafka client settings, passed through as they are.", "[cluster.client]"]
    lines.append(f'"security.protocol" = {toml_string(answers.security_protocol)}')
    if answers.sasl_mechanism:
        lines.append(f'"sasl.mechanism" = {toml_string(answers.sasl_mechanism)}')
        lines += _sasl_lines(answers.sasl_mechanism)
    if answers.security_protocol in TLS_PROTOCOLS:
        lines += _tls_lines(answers.ssl_ca_location)
    return "\n".join(lines) + "\n"


def _sasl_lines(mechanism: str) -> list[str]:
    if mechanism == "OAUTHBEARER":
        return [
            '"sasl.oauthbearer.method" = "oidc"      # librdkafka fetches and refreshes the token itself',
            '# "sasl.oauthbearer.client.id" = "lagwatch-monitor"                          # fill in',
            '# "sasl.oauthbearer.token.endpoint.url" = "https://idp.example.com/token"    # fill in',
            f"# Client secret from the environment: {env_var('sasl.oauthbearer.client.secret')}",
        ]
    return [
        f"# User and password from the environment: {env_var('sasl.username')} and {env_var('sasl.password')}",
    ]


def _tls_lines(ca_location: str | None) -> list[str]:
    ca = (
        f'"ssl.ca.location" = {toml_string(ca_location)}'
        if ca_location
        else '# "ssl.ca.location" = "/etc/ssl/certs/kafka-ca.pem"   # unset: the system\'s CAs'
    )
    return [
        ca,
        "# Client certificate (mutual TLS), if the brokers ask for one:",
        '# "ssl.certificate.location" = "/etc/lagwatch/client.pem"',
        '# "ssl.key.location" = "/etc/lagwatch/client.key"',
        f"# its key's password from the environment: {env_var('ssl.key.password')}",
    ]


def _jmx(answers: Answers) -> str:
    """One [[jmx.targets]] per broker endpoint given; none is a working config (lag needs no JMX)."""
    lines = [
        "# Broker JMX endpoints (broker metrics: request rates, under-replicated partitions, ...).",
        "# Consumer lag needs none of them: it comes from the admin API. `broker` is the label the",
        "# dashboard shows; use the broker's node.id if you prefer. JMX with a password: add",
        '# username = "monitor" and password_env = "<the variable holding the password>".',
    ]
    for label, endpoint in zip(_broker_labels(answers.jmx), answers.jmx, strict=True):
        lines += [
            "",
            "[[jmx.targets]]",
            f"broker = {toml_string(label)}",
            f"host = {toml_string(endpoint.host)}",
            f"port = {endpoint.port}",
        ]
    if not answers.jmx:
        lines += ["# [[jmx.targets]]", '# broker = "1"', '# host = "kafka1"', "# port = 9999"]
    return "\n".join(lines) + "\n"


def _broker_labels(endpoints: tuple[JmxEndpoint, ...]) -> list[str]:
    """Each endpoint's host, unless two share one (then their positions, 1, 2, ...)."""
    hosts = [endpoint.host for endpoint in endpoints]
    return hosts if len(set(hosts)) == len(hosts) else [str(i) for i in range(1, len(hosts) + 1)]


def _transport(answers: Answers) -> str:
    topics = "\n".join(f"#   {topic}" for topic in lagwatch_topics(answers))
    if answers.transport_servers:
        return (
            "# Where samples travel (collectors -> Spark job): a separate cluster, so Lagwatch writes nothing\n"
            f"# to the monitored one. Lagwatch creates these topics on {answers.transport_servers}:\n"
            f"{topics}\n"
            f"# and creates no topic on the monitored cluster ({answers.bootstrap_servers}).\n"
            "[transport]\n"
            f"bootstrap_servers = {toml_string(answers.transport_servers)}\n"
            "# Its own client settings, if it is secured (not the [cluster.client] ones), for example:\n"
            "# [transport.client]\n"
            '# "security.protocol" = "SASL_SSL"\n'
            '# "sasl.mechanism" = "SCRAM-SHA-512"\n'
            f"# user and password from {client_env_var('transport', 'sasl.username')} and"
            f" {client_env_var('transport', 'sasl.password')}\n"
        )
    return (
        "# Where samples travel (collectors -> Spark job): empty, so the monitored cluster carries them,\n"
        f"# with the [cluster.client] settings. Lagwatch creates these topics on {answers.bootstrap_servers}:\n"
        f"{topics}\n"
        "# so its principal needs Create, Write and Read on them there. A separate cluster keeps the\n"
        "# monitor read-only: set bootstrap_servers below (and [transport.client] if it is secured).\n"
        "[transport]\n"
        'bootstrap_servers = ""\n'
    )


def _the_rest() -> str:
    return (
        "# Which consumer groups are collected, and how often.\n"
        "[collect]\n"
        "interval_s = 15\n"
        'groups_allow = [".*"]\n'
        "groups_deny = []\n"
        "\n"
        "# The Parquet lake the Spark job writes and everything else reads (relative to this file).\n"
        "[lake]\n"
        'path = "lake"\n'
        "\n"
        "# The alert engine runs beside the dashboard and the API; receivers and rules: docs/alerts.md.\n"
        "[alerts]\n"
        "run = true\n"
        "\n"
        "# Dashboard and API listen on 127.0.0.1 only; another address needs auth (docs/dashboard.md, docs/api.md).\n"
        "[dashboard]\n"
        'host = "127.0.0.1"\n'
        "port = 8501\n"
        "\n"
        "[api]\n"
        'host = "127.0.0.1"\n'
        "port = 8000\n"
    )


def _next_steps(answers: Answers) -> str:
    steps = [
        'Grant the monitoring principal its ACLs: docs/operations.md, "The monitoring principal\'s ACLs"\n'
        '#    (and "Lagwatch\'s own topics" for the cluster that carries them).',
        *(f"Export {' and '.join(names)} where Lagwatch runs." for names in [_secret_vars(answers)] if names),
        "Start it: lagwatch up --no-demo   (`lagwatch status` reports each component).",
    ]
    return "# Next steps:\n" + "".join(f"# {n}. {step}\n" for n, step in enumerate(steps, start=1))


def _secret_vars(answers: Answers) -> list[str]:
    """The variables the written [cluster.client] needs before Lagwatch can log in."""
    if answers.sasl_mechanism == "OAUTHBEARER":
        return [env_var("sasl.oauthbearer.client.secret")]
    if answers.sasl_mechanism:
        return [env_var("sasl.username"), env_var("sasl.password")]
    return []


# -- writing ------------------------------------------------------------------------------------


def validated(text: str, path: Path) -> str:
    """`text`, once the model every command loads has accepted it (a ConfigError otherwise)."""
    parse_config(tomllib.loads(text), str(path), environ={})
    return text


def write(path: Path, text: str, force: bool) -> None:
    """Write `text` to `path`; an existing file is kept unless `force` ("x" mode: no race with another writer)."""
    try:
        with path.open("w" if force else "x", encoding="utf-8") as out:
            out.write(text)
    except FileExistsError:
        raise _exists(path) from None
    except OSError as exc:
        raise InitError(f"cannot write {path}: {exc.strerror}") from None


def _exists(path: Path) -> InitError:
    return InitError(f"{path} exists: pass --force to overwrite it, or --output another path")


def output_path(args: argparse.Namespace) -> Path:
    """--output, else --config (the file the other commands will then read), else ./config.toml.
    $LAGWATCH_CONFIG is not followed: a file is created only where the command line says."""
    return Path(args.output or getattr(args, "config", None) or DEFAULT_CONFIG_PATH)


def run(args: argparse.Namespace) -> int:
    """`lagwatch init`: gather, render, validate, write; exit 2 with one line for bad input."""
    ask = None if args.non_interactive or not sys.stdin.isatty() else terminal_ask
    path = output_path(args)
    try:
        if path.exists() and not args.force:  # said before any question is asked, not after
            raise _exists(path)
        write(path, validated(render(gather(args, ask)), path), args.force)
    except InitError as exc:
        print(f"lagwatch init: {exc}", file=sys.stderr)
        return exit_codes.BAD_INPUT
    print(f"wrote {path}; next: read its last lines, then `lagwatch --config {path} up --no-demo`", file=sys.stderr)
    return exit_codes.OK
