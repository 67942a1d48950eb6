"""`[collect]`: what the admin collector reads, how often, and how its instances share the work."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from lagwatch.config.base import StrictModel, compiled_regexes


class CollectConfig(StrictModel):
    #: Seconds between two collector cycles.
    interval_s: float = Field(15, gt=0)
    #: Wall-clock limit for one target's scrape; never longer than the interval.
    timeout_s: float = Field(5, gt=0)
    #: Consumer groups whose id matches any allow regex and no deny regex are collected.
    groups_allow: list[str] = Field(default_factory=lambda: [".*"])
    #: Regexes of consumer group ids never collected (deny wins over allow).
    groups_deny: list[str] = Field(default_factory=list)
    #: Topics whose name matches any allow regex and no deny regex are collected.
    topics_allow: list[str] = Field(default_factory=lambda: [".*"])
    #: Regexes of topics never collected (by default the internal `__…` topics).
    topics_deny: list[str] = Field(default_factory=lambda: ["^__"])
    #: Parallel admin requests in flight (ListOffsets batches, group offset fetches).
    admin_concurrency: int = Field(16, ge=1)
    #: Partitions per ListOffsets request.
    list_offsets_batch: int = Field(1000, ge=1)
    #: Describe every collected group each cycle (state, members, who owns each partition): a
    #: request per coordinator and 500 groups (per group where Lagwatch falls back to librdkafka).
    describe_groups: bool = True
    #: Groups per describe_consumer_groups call, where describing falls back to librdkafka.
    describe_groups_batch: int = Field(100, ge=1)
    #: Seconds between two reads of a topic's retention settings (DescribeConfigs: cleanup.policy,
    #: retention.ms, retention.bytes); a topic new to the collector is read in its first cycle.
    topic_config_refresh_s: float = Field(300, gt=0)
    #: Samples buffered in the producer before produce() blocks (backpressure, not loss).
    buffer_samples: int = Field(200_000, ge=100)
    #: Collector instances coordinate through this consumer group and topic (scale-out).
    coordination_group: str = "lagwatch-collectors"
    #: Topic whose partitions (one per target) the coordination group shares out.
    coordination_topic: str = "lagwatch.collect.targets"
    #: Session timeout of the coordination group: how soon a dead instance's targets move to the others.
    session_timeout_ms: int = Field(10_000, ge=1000)
    #: Set to false to scrape every target from this instance without coordination.
    coordinate: bool = True
    #: This collector's name: its client id in the coordination group and on its heartbeats;
    #: empty: host name and process id.
    instance_id: str = ""

    # -- commit log (docs/admin-collector.md, "Commit log") --
    #: Read every offset commit from `__consumer_offsets`: "auto" where the cluster has the topic
    #: and lets us read it (else OffsetFetch, said in a log line), "on" (the same, but a cycle
    #: without it is a scrape error), "off" (OffsetFetch only).
    commit_log: Literal["auto", "on", "off"] = "auto"

    @field_validator("groups_allow", "groups_deny", "topics_allow", "topics_deny")
    @classmethod
    def _regexes_compile(cls, patterns: list[str]) -> list[str]:
        return compiled_regexes(patterns)

    @model_validator(mode="after")
    def _timeout_within_interval(self) -> CollectConfig:
        if self.timeout_s > self.interval_s:
            raise ValueError(f"timeout_s ({self.timeout_s}) must not exceed interval_s ({self.interval_s})")
        return self
