"""How Lagwatch's lag statuses read in Burrow's vocabulary: the one mapping table.

The statuses and their order come from lagwatch/vocabulary.py. Burrow's partition statuses are
OK, WARN, STOP, STALL, REWIND; its group status is the worst partition status, with every
partition status above WARN reported as ERR (Burrow's evaluator does exactly this).
Lagwatch's ERR has no partition status of its own in Burrow; it reads as STOP, the status
Burrow gives a consumer that is not consuming, so a Burrow alert on the group's ERR still fires.
LOSS (records deleted unread) has no Burrow status either and reads as STOP for the same reason.
"""

from __future__ import annotations

from lagwatch.vocabulary import STATUS_ORDER

#: Lagwatch statuses from best to worst (the lake's `status` column); the index is the value
#: of `lagwatch_consumergroup_status`.
SEVERITY_ORDER: tuple[str, ...] = STATUS_ORDER

#: Burrow's StatusConstant (core/protocol/evaluator.go): the numbers its /metrics exports.
BURROW_CODES: dict[str, int] = {"NOTFOUND": 0, "OK": 1, "WARN": 2, "ERR": 3, "STOP": 4, "STALL": 5, "REWIND": 6}

#: Lagwatch status -> Burrow partition status.
BURROW_PARTITION_STATUS: dict[str, str] = {
    "OK": "OK",
    "WARN": "WARN",
    "REWIND": "REWIND",
    "STALL": "STALL",
    "STOP": "STOP",
    "ERR": "STOP",
    "LOSS": "STOP",
}


def severity(status: str | None) -> int:
    """Index of `status` in SEVERITY_ORDER; an unknown or missing status counts as OK (0)."""
    try:
        return SEVERITY_ORDER.index(status or "OK")
    except ValueError:
        return 0


def burrow_partition_status(status: str | None) -> str:
    return BURROW_PARTITION_STATUS.get(status or "OK", "OK")


def burrow_group_status(partition_statuses: list[str]) -> str:
    """Burrow's group status from its partitions' Burrow statuses: the worst, anything past WARN is ERR."""
    worst = max((BURROW_CODES[s] for s in partition_statuses), default=BURROW_CODES["OK"])
    return "ERR" if worst >= BURROW_CODES["ERR"] else ("WARN" if worst == BURROW_CODES["WARN"] else "OK")
