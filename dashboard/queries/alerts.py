"""The alerts page: what fires now and the event history (the backtest panel is `backtest`)."""

from __future__ import annotations

from dashboard.queries import Frames, Lake, Scope, run_each, session
from lagwatch.alert_state import FIRING, RESOLVED

#: The value as the operator reads it: a status rule's status word (STOP, not its severity index
#: 4), else the number; text, so one column holds both.
SHOWN_VALUE = "coalesce(value_text, format('{:.6g}', value)) AS value"

SQL_ALERT_EVENTS = f"""
SELECT ts, event, alertname, severity, incident_key, seq, labels, {SHOWN_VALUE}, receiver, detail
FROM alert_events_since($start) WHERE cluster = $cluster AND ts < $end
ORDER BY ts DESC
"""

#: An alert (its label set, alertname and cluster included) fires from its `firing` event until a
#: newer `resolved` one. Why by labels: the engine writes an alert's firing and resolved events
#: with its labels and no incident key (an incident is a notification group's, on its repeats and
#: deliveries), so one key would stand for every alert and show one of them.
SQL_ALERTS_FIRING = f"""
SELECT alertname, severity, incident_key, labels, {SHOWN_VALUE}, ts AS since_or_last
FROM alert_events
WHERE cluster = $cluster AND event IN ('{FIRING}', '{RESOLVED}')
QUALIFY row_number() OVER (PARTITION BY labels ORDER BY ts DESC, seq DESC) = 1 AND event <> '{RESOLVED}'
ORDER BY ts DESC
"""


def load(lake: Lake, scope: Scope) -> Frames:
    with session(lake) as con:
        return run_each(con, scope.params(), firing=SQL_ALERTS_FIRING, events=SQL_ALERT_EVENTS)
