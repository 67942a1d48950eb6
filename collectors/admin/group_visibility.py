"""Consumer groups the monitoring principal may not see: counted and named, never dropped.

On a cluster with ACLs, a group the principal has no Describe on is hidden from it: its
offsets and description are refused (GROUP_AUTHORIZATION_FAILED), and ListGroups leaves it out
unless the principal has Describe on the cluster. A lag monitor that quietly skips such a
group looks healthy while it watches less than the operator thinks, so every group that is
known to exist but cannot be read is reported: the gauge ``consumer_groups_not_visible`` each
cycle, and a log line naming them whenever the set changes.

How a hidden group can be known at all (what the admin collector does):

- ListGroups names every group when the principal has Describe on the cluster; the groups
  whose OffsetFetch or DescribeGroups is then refused are the hidden ones;
- without it, ListGroups leaves them out; a group id is then known only when it is named
  elsewhere: in the commit log (Read on ``__consumer_offsets``, which shows every group's
  commits whatever the group ACLs say) or literally in ``collect.groups_allow`` (``^orders$``).
  Those unlisted names are described once per cycle, and a refusal marks them hidden;
- a group named nowhere cannot be known: nothing reports it (docs/operations.md says so).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable

from collectors.base import SampleFactory
from lagwatch.samples import Sample
from lagwatch.vocabulary import GROUPS_NOT_VISIBLE_METRIC, Source

log = logging.getLogger(__name__)

#: The error name (as admin_requests.error_text starts it) of a group the principal may not describe.
NOT_AUTHORIZED = "GROUP_AUTHORIZATION_FAILED"
#: Group ids named in one log line; the rest are counted.
MAX_NAMED = 20
_METACHARACTERS = set(".^$*+?{}[]|()\\")
_ESCAPED_PUNCTUATION = re.compile(r"\\([^0-9A-Za-z])")


def refused(error: str) -> bool:
    """True when a group's read failed because the principal may not describe the group."""
    return error.startswith(NOT_AUTHORIZED)


def literal_names(patterns: Iterable[str]) -> set[str]:
    """The group ids that patterns name exactly (``^orders$``, ``^a\\.b$``), not those they match."""
    names = set()
    for pattern in patterns:
        if len(pattern) < 3 or not (pattern.startswith("^") and pattern.endswith("$")):
            continue
        body = pattern[1:-1]
        if _METACHARACTERS.isdisjoint(_ESCAPED_PUNCTUATION.sub("", body)):
            names.add(_ESCAPED_PUNCTUATION.sub(r"\1", body))
    return names


class HiddenGroups:
    """One collector's report of the groups it could not see: a gauge per cycle, a log line per change."""

    def __init__(self, collector: str) -> None:
        self._collector = collector
        self._said: frozenset[str] = frozenset()

    def report(self, hidden: set[str], ts: int, make: SampleFactory) -> Sample:
        """The cycle's ``consumer_groups_not_visible`` sample; logs the names when the set changed."""
        if hidden != self._said:
            self._log_change(hidden)
            self._said = frozenset(hidden)
        return make(ts=ts, source=Source.ADMIN, metric=GROUPS_NOT_VISIBLE_METRIC, kind="gauge", value=len(hidden))

    def _log_change(self, hidden: set[str]) -> None:
        if not hidden:
            log.info("%s: every known consumer group is visible again", self._collector)
            return
        names = sorted(hidden)
        shown = ", ".join(names[:MAX_NAMED]) + (
            f" … and {len(names) - MAX_NAMED} more" if len(names) > MAX_NAMED else ""
        )
        log.warning(
            "%s: %d consumer group(s) not visible to this principal (no Describe ACL on the group; "
            "without the commit log their lag is not measured): %s",
            self._collector, len(names), shown,
        )  # fmt: skip
