"""The alert engine's state as others read it: the events of the lake table `alert_events`.

Why here: the engine writes these rows and the dashboard judges from them alone what fires
now, so the event names are a contract between two processes, beside the table's columns in
:mod:`lagwatch.lake`. An alert (its labels) fires from its `firing` event until a newer
`resolved` one; repeats, deliveries and suppressions are records about it, not states of it.
"""

from __future__ import annotations

FIRING = "firing"
REPEAT = "repeat"
RESOLVED = "resolved"
DELIVERED = "delivered"
FAILED = "failed"
SILENCED = "silenced"
INHIBITED = "inhibited"

#: Events that change an alert's state (per label set, the newest one says whether it fires).
STATE_EVENTS: tuple[str, ...] = (FIRING, REPEAT, RESOLVED)

#: Every event the engine records (alert_events.event).
EVENTS: tuple[str, ...] = (*STATE_EVENTS, DELIVERED, FAILED, SILENCED, INHIBITED)
