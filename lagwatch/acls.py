"""The Kafka ACLs Lagwatch needs: one table, read by `lagwatch check` and rendered as docs/acls.md.

Why one table: the grants an operator makes, the preflight that verifies them and the page that
documents them must name the same operations on the same resources. Each row says what the code
does with the grant, on which cluster (a monitored one, or the transport cluster that carries
the samples) and when it is needed (`FEATURES`: always, or only while a config switch turns
the feature on). Kafka's implications keep the table short: Read, Write and Alter on a resource
imply Describe on it, so Describe is listed only where nothing else covers it.

``python -m lagwatch.acls`` prints the Markdown page (`> docs/acls.md`);
tests/lagwatch/test_acls.py fails while the page is stale.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal

from lagwatch.config import ClusterConfig, Config
from lagwatch.kafka import COMMIT_LOG_TOPIC, SPARK_SOURCE_GROUP

Home = Literal["monitored", "transport"]
Resource = Literal["cluster", "topic", "group"]
#: How much a feature's rows matter: required (a missing grant fails `lagwatch check`), optional
#: (Lagwatch works without it and says what it misses), off (the rows are not needed).
Level = Literal["required", "optional", "off"]

#: A resource name matching every name ('*' in kafka-acls.sh).
ANY = "*"
#: The name kafka-acls.sh and the authorizer give the cluster resource.
CLUSTER_RESOURCE = "kafka-cluster"
#: The principal the documentation's commands grant to.
DOC_PRINCIPAL = "User:lagwatch"


@dataclass(frozen=True)
class Feature:
    """When rows are needed: `level(config)` decides; `switch` names the config that decides it."""

    switch: str
    level: Callable[[Config], Level]


def _always(_config: Config) -> Level:
    return "required"


def _commit_log(config: Config) -> Level:
    return {"on": "required", "auto": "optional", "off": "off"}[config.collect.commit_log]


def _when(on: Callable[[Config], bool]) -> Callable[[Config], Level]:
    return lambda config: "required" if on(config) else "off"


#: Every condition a row of `NEEDS` may name.
FEATURES: dict[str, Feature] = {
    "always": Feature("(always)", _always),
    "commit log": Feature('collect.commit_log = "on" (required) or "auto" (optional)', _commit_log),
    "coordination": Feature("collect.coordinate = true", _when(lambda c: c.collect.coordinate)),
    "alert leadership": Feature(
        'alerts.leadership = "kafka" or "kafka_strict"', _when(lambda c: c.alerts.leadership != "none")
    ),
    "python source": Feature('spark.source = "python"', _when(lambda c: c.spark.source == "python")),
}


@dataclass(frozen=True)
class Need:
    """One grant: `operation` on `resource` `name`, on the `home` cluster, when `when` is on.

    `name` is a literal name, `ANY`, or a `{placeholder}` the config fills in (`NAMES`).
    `if_missing`: needed only while the topic does not exist (Lagwatch creates it at start;
    a topic made beforehand needs no Create).
    """

    home: Home
    operation: str
    resource: Resource
    name: str
    why: str
    when: str = "always"
    if_missing: bool = False


#: What Lagwatch does on each cluster, and the grant each request needs.
NEEDS: tuple[Need, ...] = (
    # -- each monitored cluster: read only --
    Need("monitored", "Describe", "cluster", CLUSTER_RESOURCE,
         "ListGroups lists every group (without it, groups the principal may not describe are not even "
         "known); DescribeLogDirs reads partition sizes for the retention margin"),
    Need("monitored", "Describe", "topic", ANY,
         "Metadata and ListOffsets: topics, partitions, log-end and log-start offsets; ConsumerGroupDescribe "
         "asks it for every topic a KIP-848 group subscribes to, ShareGroupDescribe and "
         "DescribeShareGroupOffsets for every topic a share group reads"),
    Need("monitored", "DescribeConfigs", "topic", ANY,
         "DescribeConfigs: each topic's cleanup.policy, retention.ms and retention.bytes (the retention margin)"),
    Need("monitored", "Describe", "group", ANY,
         "OffsetFetch, DescribeGroups, ConsumerGroupDescribe, ShareGroupDescribe, DescribeShareGroupOffsets: "
         "committed offsets, share lag, state and members; "
         "FindCoordinator of the commit-log reader's group.id lagwatch-commitlog-<cluster>"),
    Need("monitored", "Read", "topic", COMMIT_LOG_TOPIC,
         "the commit-log source reads every offset commit (else committed offsets come from OffsetFetch)",
         when="commit log"),
    # -- the transport cluster: Lagwatch's own topics and groups --
    Need("transport", "Create", "topic", "{samples_topic}",
         "the collectors create the samples topic at start", if_missing=True),
    Need("transport", "Write", "topic", "{samples_topic}", "the collectors publish samples and heartbeats"),
    Need("transport", "Read", "topic", "{samples_topic}", "the Spark job reads the samples"),
    Need("transport", "Describe", "group", SPARK_SOURCE_GROUP,
         "FindCoordinator of the Spark source's consumer (its group.id; it joins no group)", when="python source"),
    Need("transport", "Create", "topic", "{coordination_topic}",
         "collector instances create their coordination topic", when="coordination", if_missing=True),
    Need("transport", "Read", "topic", "{coordination_topic}",
         "collector instances share targets by its partitions", when="coordination"),
    Need("transport", "Alter", "topic", "{coordination_topic}",
         "CreatePartitions: one partition per target when targets are added", when="coordination"),
    Need("transport", "Read", "group", "{coordination_group}",
         "collector instances join the coordination group", when="coordination"),
    Need("transport", "Create", "topic", "{leader_topic}",
         "the alert engine creates its leader topic", when="alert leadership", if_missing=True),
    Need("transport", "Read", "topic", "{leader_topic}",
         "alert engines elect the sending one by its partition", when="alert leadership"),
    Need("transport", "Read", "group", "{leader_topic}",
         "alert engines join the leader group (named like its topic)", when="alert leadership"),
)  # fmt: skip


#: Placeholder → (the config key that sets it, its value in a config).
NAMES: dict[str, tuple[str, Callable[[Config], str]]] = {
    "samples_topic": ("transport.samples_topic", lambda c: c.transport.samples_topic),
    "coordination_topic": ("collect.coordination_topic", lambda c: c.collect.coordination_topic),
    "coordination_group": ("collect.coordination_group", lambda c: c.collect.coordination_group),
    "leader_topic": ("alerts.leader_topic", lambda c: c.alert_leader_topic),
}


@dataclass(frozen=True)
class Grant:
    """A row of `NEEDS` with its name filled in from a config, and how much it matters there."""

    need: Need
    name: str
    level: Level

    @property
    def label(self) -> str:
        """How a line names it: `Describe on group '*'`, `Read on topic __consumer_offsets`."""
        if self.need.resource == "cluster":
            return f"{self.need.operation} on the cluster"
        return f"{self.need.operation} on {self.need.resource} {shlex.quote(self.name)}"


def resolve_name(name: str, config: Config) -> str:
    """`name` with its `{placeholder}` replaced by the config's value."""
    if name.startswith("{") and name.endswith("}"):
        return NAMES[name[1:-1]][1](config)
    return name


def grants(config: Config, home: Home) -> list[Grant]:
    """The rows of `home` this config needs (required or optional), names filled in."""
    found = []
    for need in NEEDS:
        level = FEATURES[need.when].level(config)
        if need.home == home and level != "off":
            found.append(Grant(need, resolve_name(need.name, config), level))
    return found


def principal(settings: Mapping[str, object]) -> str:
    """The principal Kafka gives a client with these settings: `User:<sasl.username>` for a SASL
    login, `User:ANONYMOUS` on a plaintext listener, else `DOC_PRINCIPAL` as a stand-in (mTLS or
    OAUTHBEARER: the broker maps the certificate or the token to the name)."""
    user = settings.get("sasl.username")
    if user:
        return f"User:{user}"
    return DOC_PRINCIPAL if is_secured(settings) else "User:ANONYMOUS"


def is_secured(settings: Mapping[str, object]) -> bool:
    """The cluster asks a login or TLS, so kafka-acls.sh needs an admin's `--command-config`."""
    return str(settings.get("security.protocol", "plaintext")).lower() != "plaintext"


def acl_command(grant: Grant, who: str, bootstrap: str, secured: bool) -> str:
    """The kafka-acls.sh line that adds `grant` for the principal `who`."""
    words = ["kafka-acls.sh", "--bootstrap-server", bootstrap]
    if secured:
        words += ["--command-config", "admin.properties"]
    words += ["--add", "--allow-principal", who, "--operation", grant.need.operation]
    words += ["--cluster"] if grant.need.resource == "cluster" else [f"--{grant.need.resource}", grant.name]
    return " ".join(shlex.quote(word) for word in words)


def command_for(grant: Grant, settings: Mapping[str, object]) -> str:
    """The kafka-acls.sh line for the principal and cluster of a client's settings
    (`lagwatch.kafka.cluster_client_config` or `transport_client_config`)."""
    bootstrap = str(settings.get("bootstrap.servers", "")).split(",")[0].strip()
    return acl_command(grant, principal(settings), bootstrap, is_secured(settings))


# -- docs/acls.md --------------------------------------------------------------------------

DOC_SERVER = "kafka1:9093"


def _doc_config() -> Config:
    """The defaults, with the home cluster's name a placeholder (the leader topic carries it)."""
    return Config(cluster=ClusterConfig(name="<cluster>"))


_HOMES: dict[Home, tuple[str, str]] = {
    "monitored": (
        "On each monitored cluster",
        "Read only: watching a cluster needs no Write, Create or Alter. When the transport is the "
        "monitored cluster itself (`transport.bootstrap_servers` empty, the default), that cluster also "
        "carries Lagwatch's own `lagwatch.*` topics and needs the transport grants below. "
        "With `[[clusters]]`, each cluster's principal (its `client` settings) needs these on its cluster.",
    ),
    "transport": (
        "On the transport cluster",
        "Lagwatch's own topics and groups, on `[transport]` (the first monitored cluster when "
        "`transport.bootstrap_servers` is empty, whose principal then needs these too; a separate "
        "transport principal keeps the monitor read-only). The collectors, the Spark job and the "
        "alert engine all log in with the transport's `client` settings. Create is needed only "
        "while a topic does not exist: topics made beforehand need none.",
    ),
}


def _doc_name(need: Need) -> str:
    if need.name.startswith("{"):
        key, value = NAMES[need.name[1:-1]]
        return f"`{value(_doc_config())}` (`{key}`)"
    return f"`{need.name}`"


def _doc_table(home: Home) -> list[str]:
    lines = ["| operation | resource | needed | what Lagwatch does with it |", "|---|---|---|---|"]
    for need in NEEDS:
        if need.home != home:
            continue
        resource = "cluster" if need.resource == "cluster" else f"{need.resource} {_doc_name(need)}"
        when = "always" if need.when == "always" else FEATURES[need.when].switch
        if need.if_missing:
            when += ", while the topic does not exist"
        lines.append(f"| {need.operation} | {resource} | {when} | {need.why} |")
    return lines


def _doc_commands(home: Home) -> list[str]:
    """The commands for a default config with every feature on."""
    config = _doc_config()
    lines = ["```sh"]
    for need in NEEDS:
        if need.home == home:
            grant = Grant(need, resolve_name(need.name, config), "required")
            lines.append(acl_command(grant, DOC_PRINCIPAL, DOC_SERVER, secured=True))
    return [*lines, "```"]


INTRO = """\
# Kafka ACLs

What the principal Lagwatch logs in as needs on a cluster with an authorizer, generated from
`lagwatch/acls.py` (`python -m lagwatch.acls > docs/acls.md`), the table `lagwatch check` checks.
Names in the commands are the defaults; the key after a name is the config that changes it.
Narrower patterns (`--resource-pattern-type prefixed --topic orders.`) work too: what they
leave out is what Lagwatch cannot see, and `lagwatch check` reports a grant on `'*'` as missing.
Kafka before 3.0 also asks IdempotentWrite on the transport cluster for the samples producer.
"""

CHECK = """\
## How `lagwatch check` verifies them

As the configured principal, with the requests the code makes, so it works without the right
to list ACLs (which needs Describe on the cluster): DescribeCluster, Metadata and DescribeGroups
with the authorized operations Kafka computes for this principal, DescribeConfigs, and
CreateTopics with `validate_only` for a topic that does not exist yet. A grant on `'*'` is
probed with a name nobody grants literally. A topic that does not exist yet cannot show its
authorized operations: its Read and Write are reported as not checked until Lagwatch has
created it. Each missing grant is one `FAIL` line with the `kafka-acls.sh` command that adds it
(`WARN` for an optional one, which does not fail the check).
"""


def render() -> str:
    """docs/acls.md."""
    parts = [INTRO]
    for home, (title, text) in _HOMES.items():
        body = "\n".join([*_doc_table(home), "", *_doc_commands(home)])
        parts.append(f"## {title}\n\n{text}\n\n{body}\n")
    parts.append(CHECK)
    return "\n".join(parts)


if __name__ == "__main__":
    sys.stdout.write(render())
