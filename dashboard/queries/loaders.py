"""What each page runs on a render, by page name: the benchmark (`bench/bench_dashboard.py`)
times these and the many-clusters test runs them, so both see exactly the pages' queries."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from dashboard.queries import Frames, Lake, Scope, alerts, brokers, clusters, groups, overview, pipeline, topics

#: page (its view file's name) -> the loader(s) the page runs on a render.
PAGE_LOADERS: dict[str, Callable[[Lake, Scope], Frames]] = {
    "overview": overview.load,
    "clusters": partial(clusters.load, configured=[]),
    "brokers": brokers.load,
    "topics": topics.page,
    "groups": groups.page,
    "alerts": alerts.load,
    "pipeline": pipeline.load,
}
