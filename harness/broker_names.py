"""What a broker holds, listed as an operator would: to prove Lagwatch added only its own names."""

from __future__ import annotations

from dataclasses import dataclass

from confluent_kafka.admin import AdminClient

#: Prefixes of what Lagwatch itself creates: its topics (`lagwatch.samples`, …) and its
#: consumer groups (`lagwatch.coordination`, `lagwatch-commitlog-<cluster>`, …).
OWN_PREFIXES = ("lagwatch.", "lagwatch-")


@dataclass(frozen=True)
class BrokerNames:
    topics: frozenset[str]
    groups: frozenset[str]


def broker_names(bootstrap: str) -> BrokerNames:
    """The broker's topics and consumer groups."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topics = admin.list_topics(timeout=10).topics
    groups = admin.list_consumer_groups(request_timeout=10).result()
    return BrokerNames(frozenset(topics), frozenset(g.group_id for g in groups.valid))


def added_since(before: BrokerNames, bootstrap: str) -> BrokerNames:
    """Topics and groups the broker holds now that it did not hold at `before`."""
    after = broker_names(bootstrap)
    return BrokerNames(after.topics - before.topics, after.groups - before.groups)
