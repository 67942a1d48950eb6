"""The alerts page: what fires now and the event history (the backtest panel is `backtest`)."""

from __future__ import annotations

from dashboard.queries import Frames, Lake, Scope, run_each, session
from lagwatch.alert_state import RESOLVED, STATE_EVENTS

SQL_ALERT_EVENTS = """
SELECT ts, event, alertname, severity, incident_key, seq, labels, value, receiver, detail
FROM alert_events_since($start) WHERE cluster = $cluster AND ts < $end
ORDER BY ts DESC
"""

#: An incident fires until its newest state event says resolved (deliveries are not states).
SQL_ALERTS_FIRING = f"""
SELECT alertname, severity, incident_key, labels, value, ts AS since_or_last
FROM alert_events
WHERE cluster = $cluster AND event IN {STATE_EVENTS}
QUALIFY row_number() OVER (PARTITION BY incident_key ORDER BY ts DESC, seq DESC) = 1 AND event <> '{RESOLVED}'
ORDER BY ts DESC
"""


def load(lake: Lake, scope: Scope) -> Frames:
    with session(lake) as con:
        return run_each(con, scope.params(), firing=SQL_ALERTS_FIRING, events=SQL_ALERT_EVENTS)
