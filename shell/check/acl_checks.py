"""The grants of `lagwatch.acls` this config needs, each checked against what the principal may do.

One line per missing grant, with the kafka-acls.sh command that adds it; one PASS line for a
cluster where none is missing. Read and Write on a topic that does not exist yet cannot be
checked (Kafka computes authorized operations for existing topics only): a SKIP line says so.
"""

from __future__ import annotations

from lagwatch.acls import ANY, Grant, command_for, principal
from shell.check.acl_probe import AclProbe, ProbeError
from shell.check.outcome import Outcome, Status

#: Verdicts of one grant: present, missing, or not checkable while its topic does not exist.
PRESENT, MISSING, NOT_YET = "present", "missing", "not yet"


def verdict(probe: AclProbe, grant: Grant) -> str:
    """PRESENT, MISSING or NOT_YET."""
    need = grant.need
    operation = need.operation
    if need.resource == "cluster":
        return _present(operation in probe.cluster_operations())
    if need.resource == "group":
        operations = probe.any_group() if grant.name == ANY else probe.group_operations(grant.name)
        return _present(operation in operations)
    if grant.name == ANY:
        return _present(probe.any_topic(operation))
    access = probe.topic(grant.name)
    if need.if_missing:  # Create: only while the topic does not exist
        return PRESENT if access.exists else _present(probe.may_create(grant.name))
    if access.operations is not None:
        return _present(operation in access.operations)
    if operation == "Describe":  # "unknown topic" is the answer to one who may describe it
        return PRESENT
    return NOT_YET


def _present(yes: bool) -> str:
    return PRESENT if yes else MISSING


def acl_outcomes(label: str, settings: dict[str, object], grants: list[Grant], timeout_s: float) -> list[Outcome]:
    """The lines for one cluster: `label` names it, `settings` are the client's (principal, servers)."""
    subject, who = f"acl {label}", principal(settings)
    if not grants:
        return [Outcome("PASS", subject, "no grant needed with this config")]
    probe = AclProbe(dict(settings), timeout_s)
    lines: list[Outcome] = []
    not_yet: dict[str, list[str]] = {}
    for grant in grants:
        try:
            found = verdict(probe, grant)
        except ProbeError as exc:
            lines.append(Outcome("FAIL", subject, f"could not check {grant.label} for {who}: {exc}"))
            continue
        if found == MISSING:
            status: Status = "FAIL" if grant.level == "required" else "WARN"
            optional = "" if grant.level == "required" else f" (optional: {grant.need.why})"
            text = f"missing {grant.label} for {who}{optional}"
            lines.append(Outcome(status, subject, text, f"run: {command_for(grant, settings)}"))
        elif found == NOT_YET:
            not_yet.setdefault(grant.name, []).append(grant.need.operation)
    lines += [_not_yet(subject, topic, operations) for topic, operations in not_yet.items()]
    if all(line.status == "SKIP" for line in lines):
        unchecked = sum(len(operations) for operations in not_yet.values())
        present = f"{len(grants) - unchecked} of {len(grants)}" if unchecked else f"all {len(grants)}"
        lines.insert(0, Outcome("PASS", subject, f"{present} grants present for {who}"))
    return lines


def _not_yet(subject: str, topic: str, operations: list[str]) -> Outcome:
    """Kafka shows the operations on an existing topic only: these wait until Lagwatch creates it."""
    text = (
        f"topic {topic} does not exist yet: {' and '.join(operations)} on it cannot be checked "
        "until Lagwatch creates it (`lagwatch collect`, `lagwatch up`); run the check again then"
    )
    return Outcome("SKIP", subject, text)
