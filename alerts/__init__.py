"""The alert engine: rules over the lake, Alertmanager semantics, delivery through an outbox.

Modules: rules (compile + defaults), evaluate (rules over the lake), notify (alert and group
state machine), receivers (bodies + HTTP), store (SQLite state), outbox (retries, ordering),
events (alert_events rows), leader (one sender per cluster), engine (the loop). Silences and
the alert_events vocabulary are shared with the dashboard, so they live in lagwatch/
(`lagwatch.silences`, `lagwatch.alert_state`).
"""
