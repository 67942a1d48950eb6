"""Lag analytics in the stream (docs/rollups.md, "Lag").

- ``step.py``: the operator's lag step, a batch of samples in, lag_1m and group_status rows out;
- ``pairing.py``: which samples are lag samples, and a cycle's two samples paired into one observation;
- ``tracker.py``: one group-partition's state and the lag_1m values it reports;
- ``time_lag.py``: time lag from the log-end history, ETA and retention margin;
- ``rules.py``: the status rules, as a table (docs/rollups.md is generated from it);
- ``group.py``: a group's status from its partitions';
- ``membership.py``: who owns each partition, the group's state and rebalances;
- ``broker_events.py``: broker health events per cluster;
- ``reasons.py``: every reason string, composed in one place.
"""
