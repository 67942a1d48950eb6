"""Whether each monitored cluster could be read, from its admin collector's `up` sample.

Why: every lag observation comes from the admin collector's cycle. When that cycle fails (the
cluster is unreachable, or refuses the collector), the collector publishes only `up` = 0 and
the scrape duration (collectors/runner.py), so the groups' newest lag is simply the old one.
Judging on would report old lag as current; instead the cluster's groups are ERR until a cycle
succeeds again (the rule ``unreachable`` in ``rules.py``, its rows in ``unreachable.py``).

``route.py`` sends a copy of each admin `up` sample (role CLUSTER) to every bucket, one per
cluster and cycle, so every bucket keeps the same state: per cluster its newest `up` reading
and, while it is 0, the first failed cycle of the run. A reading not newer than the cluster's
newest changes nothing (a repeat, or late).
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass

import numpy as np
import pandas as pd

from spark_jobs.lag.rules import Outage
from spark_jobs.windows import series_labels


@dataclass(slots=True)
class ClusterReach:
    """One cluster's newest admin `up` reading (ts, 1/0) and, while down, the first failed cycle."""

    newest_ms: int
    up: bool
    down_since_ms: int = -1


#: cluster name -> its reachability
Reachability = dict[str, ClusterReach]


def encode(state: Reachability) -> bytes:
    plain = {name: (reach.newest_ms, reach.up, reach.down_since_ms) for name, reach in state.items()}
    return pickle.dumps(plain, protocol=pickle.HIGHEST_PROTOCOL)


def decode(blob: bytes) -> Reachability:
    return {name: ClusterReach(*saved) for name, saved in pickle.loads(blob).items()}


def fold(state: Reachability, samples: pd.DataFrame) -> set[str]:
    """Take a batch's admin `up` samples (columns ts, value, series_key) in time order; return the
    clusters whose newest reading came in this batch."""
    if samples.empty:
        return set()
    clusters = series_labels(samples["series_key"].to_numpy(), ("cluster",))["cluster"]
    ts = samples["ts"].to_numpy(np.int64)
    up = samples["value"].to_numpy(np.float64) >= 1
    touched: set[str] = set()
    for row in np.argsort(ts, kind="stable").tolist():
        name, at_ms, answered = clusters[row], int(ts[row]), bool(up[row])
        reach = state.get(name)
        if reach is not None and at_ms <= reach.newest_ms:
            continue
        if answered:
            state[name] = ClusterReach(at_ms, True)
        else:
            still_down = reach is not None and not reach.up
            state[name] = ClusterReach(at_ms, False, reach.down_since_ms if still_down else at_ms)
        touched.add(name)
    return touched


def outages(state: Reachability) -> dict[str, Outage]:
    """Every cluster whose newest admin cycle failed: since when, and its newest failed cycle."""
    return {name: Outage(name, reach.down_since_ms, reach.newest_ms) for name, reach in state.items() if not reach.up}
