"""A group made to rebalance a given number of times, one settled generation (or, for a KIP-848
group, group epoch) at a time: members join one by one, then leave one by one (they leave on
close), and each step waits until the describe shows the group Stable with the new member count,
so each step is one rebalance."""

from __future__ import annotations

from confluent_kafka import ConsumerGroupState
from confluent_kafka.admin import AdminClient

from tests.collectors.group_members import GroupMember, wait_for


def rebalance(
    bootstrap: str, group: str, topic: str, times: int, members_before: int = 1, protocol: str = "classic"
) -> None:
    """Make the (Stable, `members_before` members) group rebalance `times` times; it ends with
    `members_before` members again when `times` is even."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    joined: list[GroupMember] = []
    try:
        for step in range(times):
            if step < (times + 1) // 2:
                joined.append(GroupMember(bootstrap, group, topic, f"rebalancer-{step}", None, protocol))
            else:
                joined.pop().close()
            wait_settled(admin, group, members_before + len(joined))
    finally:
        for member in joined:
            member.close()


def wait_settled(admin: AdminClient, group: str, members: int) -> None:
    def settled() -> bool:
        described = admin.describe_consumer_groups([group], request_timeout=10)[group].result()
        return described.state == ConsumerGroupState.STABLE and len(described.members) == members

    wait_for(settled, f"{group} Stable with {members} members")
