"""Is each Kafka cluster reachable with its configured settings, and what is it?

Reachability and the refusal cause come from `lagwatch.kafka.check_reachable`, the very check
the collectors start with, so `check` names a refused login or an untrusted certificate in the
same words. The broker release is read from the ApiVersions librdkafka logs while it connects:
it works on every listener (SASL, TLS) and needs no ACL, where asking the broker for its
configs would need DescribeConfigs on the cluster.
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass, field
from typing import Any

from lagwatch.kafka import KafkaRefused, KafkaUnreachable, check_reachable
from shell.check.outcome import Outcome

#: Seconds each cluster may take to answer (all clusters are asked at once).
KAFKA_TIMEOUT_S = 5.0
#: ApiKey ListOffsets: Kafka 4.0 removed its version 0 (KIP-896), which tells 4.x from 3.x.
LIST_OFFSETS = 2
#: The requests whose newest version the line shows: (key, name).
SHOWN_APIS = ((0, "Produce"), (1, "Fetch"), (3, "Metadata"))
_API_LINE = re.compile(r"ApiKey \S+ \((\d+)\) Versions (\d+)\.\.(\d+)")


@dataclass
class ClusterFacts:
    """What one connection told about the cluster."""

    brokers: int
    #: Request key → (oldest, newest) version, as the brokers announced them (widest range seen).
    versions: dict[int, tuple[int, int]] = field(default_factory=dict)


class _ApiVersionLines(logging.Handler):
    """Collects the 'ApiKey … Versions a..b' lines librdkafka logs with debug=feature."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.versions: dict[int, tuple[int, int]] = {}
        self.logger = logging.Logger("lagwatch.check.apiversions")  # not in the tree: nothing propagates
        self.logger.addHandler(self)

    def emit(self, record: logging.LogRecord) -> None:
        match = _API_LINE.search(record.getMessage())
        if match:
            key, low, high = (int(g) for g in match.groups())
            seen_low, seen_high = self.versions.get(key, (low, high))
            self.versions[key] = (min(low, seen_low), max(high, seen_high))


def read_cluster(settings: dict[str, Any], timeout_s: float = KAFKA_TIMEOUT_S) -> ClusterFacts:
    """Broker count (DescribeCluster) and the ApiVersions seen; the cluster must answer."""
    from confluent_kafka.admin import AdminClient

    lines = _ApiVersionLines()
    admin = AdminClient({**settings, "debug": "feature", "logger": lines.logger})
    description = admin.describe_cluster(request_timeout=timeout_s).result(timeout_s)
    wanted = {LIST_OFFSETS, *(key for key, _ in SHOWN_APIS)}
    deadline = time.monotonic() + timeout_s
    while not wanted <= lines.versions.keys() and time.monotonic() < deadline:
        admin.poll(0.1)  # hands the queued log lines to the handler
    return ClusterFacts(brokers=len(description.nodes), versions=lines.versions)


def release(versions: dict[int, tuple[int, int]]) -> str:
    """'Kafka 4.0 or later (Produce v13, Fetch v18, Metadata v13)': the line the broker's
    ApiVersions allow; an exact release would take a right (DescribeConfigs) Lagwatch does not ask."""
    if not versions:
        return "Kafka (ApiVersions not seen)"
    line = "Kafka 4.0 or later" if versions.get(LIST_OFFSETS, (0, 0))[0] >= 1 else "Kafka before 4.0"
    newest = ", ".join(f"{name} v{versions[key][1]}" for key, name in SHOWN_APIS if key in versions)
    return f"{line} ({newest})"


@dataclass(frozen=True)
class KafkaTarget:
    """A cluster `check` logs in to, with the settings the product would use there."""

    #: The cluster's name ("transport" for a transport cluster of its own).
    label: str
    #: librdkafka settings: `cluster_client_config` or `transport_client_config`.
    settings: dict[str, Any]
    #: The config section its servers and client settings come from, as fixes name it.
    section: str
    #: The variable its SASL password comes from.
    password_var: str

    @property
    def servers(self) -> str:
        return str(self.settings.get("bootstrap.servers", ""))


def refusal_fix(target: KafkaTarget, cause: str) -> str:
    """What to change for a refused connection (`lagwatch.kafka.refusal_cause` words the cause)."""
    if "authentication failed" in cause:
        user = target.password_var.replace("_PASSWORD", "_USERNAME")
        return f"check sasl.mechanism in {target.section} client, and the login in {user} / {target.password_var}"
    if "not trusted" in cause:
        return f"set ssl.ca.location in {target.section} client to the CA that signed the brokers' certificates"
    return f"check the ssl.* settings in {target.section} client"


def cluster_outcome(target: KafkaTarget) -> tuple[Outcome, bool]:
    """(the line for one cluster, whether it answered)."""
    from confluent_kafka import KafkaException

    subject = f"cluster {target.label}"
    try:
        check_reachable(target.settings, KAFKA_TIMEOUT_S)  # the line names the cluster already
    except KafkaRefused as exc:
        return Outcome("FAIL", subject, str(exc), refusal_fix(target, str(exc))), False
    except KafkaUnreachable as exc:
        fix = f"check bootstrap_servers in {target.section} and that the brokers are up and reachable from this host"
        return Outcome("FAIL", subject, str(exc), fix), False
    except KafkaException as exc:  # librdkafka refused the settings themselves
        user = target.password_var.replace("_PASSWORD", "_USERNAME")
        text = f"the client settings of {target.section} were refused: {exc.args[0].str() if exc.args else exc}"
        return Outcome(
            "FAIL", subject, text, f"fix {target.section} client (a SASL login needs {user} and {target.password_var})"
        ), False
    try:
        facts = read_cluster(target.settings)
    except Exception as exc:  # answered metadata, then failed DescribeCluster: not usable as configured
        return Outcome(
            "FAIL", subject, f"Kafka at {target.servers!r} answered, then failed DescribeCluster: {exc}"
        ), False
    brokers = f"{facts.brokers} broker{'s' if facts.brokers != 1 else ''}"
    return Outcome("PASS", subject, f"{release(facts.versions)}, {brokers} at {target.servers}"), True
