"""Lag analytics in the stream (docs/rollups.md, "Lag").

- ``step.py``: the operator's lag step, a batch of samples in, lag_1m and group_status rows out;
- ``pairing.py``: which samples are lag samples, and a cycle's two samples paired into one observation;
- ``tracker.py``: one group-partition's state and the lag_1m values it reports;
- ``time_lag.py``: time lag from the log-end history, the ETA and the committed record's age;
- ``retention.py``: the retention margin: how long until retention deletes the committed offset;
- ``rules.py``: the status rules, as a table (docs/rollups.md is generated from it);
- ``group.py``: a group's status from its partitions';
- ``membership.py``: who owns each partition, the group's state and rebalances;
- ``reachability.py``: whether each cluster could be read, from its admin collector's `up`;
- ``unreachable.py``: the rows of a cluster that cannot be read, every group and partition ERR;
- ``broker_events.py``: broker health events per cluster;
- ``reasons.py``: every reason string, composed in one place.
"""
