"""One line per check: its verdict, what was checked, and the fix when it failed."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from lagwatch import exit_codes

#: PASS and FAIL decide the exit code; WARN (an optional grant missing) and SKIP (nothing to
#: check, or not checkable yet) are shown but never fail the command.
Status = Literal["PASS", "WARN", "SKIP", "FAIL"]


@dataclass(frozen=True)
class Outcome:
    status: Status
    #: What was checked: "cluster prod", "acl prod", "jmx prod", "jdk", "path lake.path", …
    subject: str
    text: str
    #: What to do about it (failures and warnings).
    fix: str = ""

    def line(self) -> str:
        fix = f" — {self.fix}" if self.fix else ""
        return f"{self.status} {self.subject}: {self.text}{fix}"


def exit_code(outcomes: Sequence[Outcome]) -> int:
    """OK only when no check failed."""
    return exit_codes.FAILED if any(o.status == "FAIL" for o in outcomes) else exit_codes.OK


def summary(outcomes: Sequence[Outcome]) -> str:
    """The closing line: how many of each verdict, and whether Lagwatch is ready to start."""
    counts = ", ".join(
        f"{n} {status}" for status in ("FAIL", "WARN", "PASS", "SKIP") if (n := _count(outcomes, status))
    )
    verdict = "fix the FAIL lines above" if _count(outcomes, "FAIL") else "ready"
    return f"lagwatch check: {counts}: {verdict}"


def _count(outcomes: Sequence[Outcome], status: Status) -> int:
    return sum(o.status == status for o in outcomes)
