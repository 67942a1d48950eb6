"""The admin collector's topic retention settings, against what the real broker applies.

Each topic's cleanup.policy, retention.ms and retention.bytes as DescribeConfigs answers them
(set on the topic, or the broker's default), read in the first cycle that lists the topic and
not again until `collect.topic_config_refresh_s` has passed.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from collectors.admin.collector import AdminCollector
from collectors.admin.topic_configs import policy_code
from harness.real_kafka import RealKafkaBroker
from lagwatch.config import Config
from lagwatch.vocabulary import CLEANUP_POLICY_CODE
from tests.collectors.admin.test_admin import MAKE, values

WEEK_MS = 7 * 86_400_000


def test_each_topics_settings_are_read_once_then_at_the_refresh(
    make_config: Callable[..., Config], broker: RealKafkaBroker, unique: Callable[[str], str]
) -> None:
    names = {kind: unique(f"settings-{kind}") for kind in ("default", "compact", "short", "forever")}
    settings = {
        "default": {},
        "compact": {"cleanup.policy": "compact,delete"},
        "short": {"retention.ms": "60000", "retention.bytes": "1048576"},
        "forever": {"retention.ms": "-1"},
    }
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    for future in admin.create_topics([NewTopic(names[k], 1, 1, config=settings[k]) for k in names]).values():
        future.result(10)
    collector = AdminCollector(make_config(collect={"topics_allow": [f"^{n}$" for n in names.values()]}))
    try:
        first = collector.collect(1_700_000_000_000, MAKE)
        again = collector.collect(1_700_000_015_000, MAKE)
    finally:
        collector.close()

    # Offsets of topics this new may still answer NOT_LEADER: only the settings' errors count here.
    assert first.ok and [e for e in first.errors if e.startswith("topic retention")] == [], first.errors

    def setting(metric: str) -> dict[str, float]:
        return {topic: value for (_, topic, _), value in values(first, metric).items()}

    assert setting("topic_cleanup_policy") == {
        names["default"]: CLEANUP_POLICY_CODE["delete"],
        names["compact"]: CLEANUP_POLICY_CODE["compact,delete"],
        names["short"]: CLEANUP_POLICY_CODE["delete"],
        names["forever"]: CLEANUP_POLICY_CODE["delete"],
    }
    assert setting("topic_retention_ms") == {
        names["default"]: WEEK_MS, names["compact"]: WEEK_MS, names["short"]: 60_000, names["forever"]: -1
    }  # fmt: skip
    assert setting("topic_retention_bytes") == {
        names["default"]: -1, names["compact"]: -1, names["short"]: 1_048_576, names["forever"]: -1
    }  # fmt: skip
    assert again.ok and values(again, "topic_retention_ms") == {}, "not read again before the refresh"


def test_a_policy_is_coded_whatever_order_the_broker_lists_it_in() -> None:
    assert policy_code("delete,compact") == policy_code("compact, delete") == CLEANUP_POLICY_CODE["compact,delete"]
    with pytest.raises(ValueError, match=r"cleanup\.policy 'shred'"):
        policy_code("shred")
