"""`lagwatch check`: run every check at once, print one line each in a fixed order, exit 0 only if none failed.

Network checks run in parallel (a cluster that does not answer costs its own timeout, not the
others'); the lines come out grouped by kind (clusters, ACLs, JMX, JDK, paths, ports,
receivers) whatever order they finish in. On the embedded broker (no bootstrap servers) there is
no cluster to reach and no authorizer: those lines pass with a note.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from lagwatch.acls import Home, grants
from lagwatch.config import ClusterConfig, Config
from lagwatch.config.secrets import client_env_var, named_cluster_env_var
from lagwatch.kafka import cluster_client_config, transport_client_config
from shell.check.acl_checks import acl_outcomes
from shell.check.kafka_checks import KAFKA_TIMEOUT_S, KafkaTarget, cluster_outcome
from shell.check.local_checks import local_outcomes
from shell.check.network_checks import jmx_outcomes, receiver_outcomes
from shell.check.outcome import Outcome, exit_code, summary

#: A job's lines by kind: "cluster", "acl" or "other".
Lines = dict[str, list[Outcome]]
KINDS = ("cluster", "acl", "other")
TRANSPORT = "transport"


def monitored_target(config: Config, cluster: ClusterConfig) -> KafkaTarget:
    many = "clusters" in config.model_fields_set
    section = f"[[clusters]] {cluster.name!r}" if many else "[cluster]"
    password = (
        named_cluster_env_var(cluster.name, "sasl.password") if many else client_env_var("cluster", "sasl.password")
    )
    return KafkaTarget(cluster.name, cluster_client_config(config, cluster), section, password)


def transport_target(config: Config) -> KafkaTarget:
    return KafkaTarget(
        TRANSPORT, transport_client_config(config), "[transport]", client_env_var("transport", "sasl.password")
    )


def kafka_job(config: Config, target: KafkaTarget, homes: tuple[Home, ...]) -> Lines:
    """The cluster's line, then its ACL lines for `homes` (none if it did not answer)."""
    line, answered = cluster_outcome(target)
    return {"cluster": [line], "acl": [o for home in homes for o in _acls(config, target, home, answered)]}


def _acls(config: Config, target: KafkaTarget, home: Home, answered: bool) -> list[Outcome]:
    label = TRANSPORT if home == "transport" else target.label
    if not answered:
        return [Outcome("SKIP", f"acl {label}", f"not checked: cluster {target.label} did not answer")]
    return acl_outcomes(label, target.settings, grants(config, home), KAFKA_TIMEOUT_S)


def embedded_lines(config: Config) -> Lines:
    name = config.cluster.name
    embedded = "the demo broker is embedded (tansu, started by `lagwatch up`): no cluster to reach"
    return {
        "cluster": [Outcome("PASS", f"cluster {name}", embedded)],
        "acl": [Outcome("PASS", f"acl {name}", "the embedded broker has no authorizer: no ACLs to check")],
    }


def jobs(config: Config) -> list[Callable[[], Lines]]:
    """One job per cluster (the transport's grants checked on the cluster that carries the samples), then the rest."""
    found: list[Callable[[], Lines]] = []
    own_transport = bool(config.transport.bootstrap_servers)
    if config.on_embedded_broker:
        found.append(lambda: embedded_lines(config))
    else:
        for index, cluster in enumerate(config.clusters):
            homes: tuple[Home, ...] = ("monitored",) if own_transport or index else ("monitored", "transport")
            target = monitored_target(config, cluster)  # the home cluster's login is the transport's then too
            found.append(lambda target=target, homes=homes: kafka_job(config, target, homes))
    if own_transport:
        found.append(lambda: kafka_job(config, transport_target(config), ("transport",)))
    found.append(lambda: {"other": jmx_outcomes(config)})
    found.append(lambda: {"other": local_outcomes(config)})
    found.append(lambda: {"other": receiver_outcomes(config)})
    return found


def outcomes(config: Config) -> list[Outcome]:
    """Every check's line, grouped by kind in a fixed order."""
    work = jobs(config)
    with ThreadPoolExecutor(max_workers=len(work), thread_name_prefix="check") as pool:
        results = [future.result() for future in [pool.submit(job) for job in work]]
    return [line for kind in KINDS for result in results for line in result.get(kind, [])]


def run(config: Config, args: argparse.Namespace) -> int:
    """Print every line and a closing count; FAILED if any line is a FAIL (lagwatch/exit_codes.py)."""
    lines = outcomes(config)
    for line in lines:
        print(line.line(), flush=True)
    print(summary(lines), flush=True)
    return exit_code(lines)
