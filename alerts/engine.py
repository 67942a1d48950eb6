"""The alert engine: evaluate → notification state → outbox → delivery, every `evaluate_every_s`.

`lagwatch alerts` runs it; `lagwatch dashboard` starts that command as a child process
(`[alerts] run`) so alerts go out whether or not anyone has the page open, and
`start_in_background(config)` runs it on a thread of another process. `lagwatch alerts
--once` evaluates, sends what is due and exits; it skips `group_wait` (a one-shot run cannot
wait for more alerts to join a group) and sends without leader election (an explicit operator
action). Its exit code is 0 when everything due was delivered, 1 when some deliveries are
still pending in the outbox (the next run retries them), 2 for a bad config.

Evaluation uses an injectable clock (`step(now=…)`) so tests move time by writing lake rows;
the outbox's retry timing always uses the real clock.
"""

from __future__ import annotations

import argparse
import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from alerts.evaluate import Evaluator
from alerts.events import EventLog
from alerts.leader import Leadership, leadership_for
from alerts.notify import Notifier
from alerts.outbox import DeliveryStats, Outbox, enqueue
from alerts.receivers import check_receiver_urls, encode_body
from alerts.rules import CompiledRule, compile_rules
from alerts.store import Store
from lagwatch.config import Config
from lagwatch.silences import active_silences
from lagwatch.stop_signals import stop_on_signals

log = logging.getLogger(__name__)

#: How often the loop looks at due retries and leadership between evaluations.
SERVE_EVERY_S = 0.2


@dataclass
class CycleSummary:
    leading: bool
    conditions: int
    firing: int
    enqueued: int
    evaluate_s: float

    def line(self) -> str:
        role = "leader" if self.leading else "follower"
        return (
            f"{role}: {self.conditions} conditions true, {self.firing} alerts firing, "
            f"{self.enqueued} notifications queued (evaluation {self.evaluate_s * 1000:.0f} ms)"
        )


class AlertEngine:
    def __init__(
        self,
        config: Config,
        *,
        rules: list[CompiledRule] | None = None,
        leadership: Leadership | None = None,
        clock: Callable[[], float] = time.time,
        once: bool = False,
    ) -> None:
        self.config = config
        self.rules = rules if rules is not None else compile_rules(config.alerts)
        check_receiver_urls(config.alerts.receivers)
        self.clock = clock
        instance = f"{socket.gethostname()}-{os.getpid()}"
        self.store = Store(config.resolve_path(config.alerts.state_dir))
        self.events = EventLog(config, self.store)
        self.outbox = Outbox(config, self.store, self.events, sender=instance)
        self.evaluator = Evaluator(config, self.rules)
        external_url = f"http://{config.dashboard.host}:{config.dashboard.port}"
        self.notifier = Notifier(config.alerts, self.rules, external_url)
        self.notifier.load(self.store.get_json("notifier", {}))
        self.leadership = leadership or leadership_for(config, instance, once=once)
        self._receivers = {r.name: r for r in config.alerts.receivers}
        if not self._receivers:
            log.warning("no [[alerts.receivers]] configured: alerts are evaluated and recorded, not sent")

    def evaluate_and_notify(self, now: float | None = None, skip_group_wait: bool = False) -> CycleSummary:
        """One evaluation: new alert states, due notifications into the outbox, events queued."""
        now = self.clock() if now is None else now
        leading = self.leadership.is_leader()
        started = time.monotonic()
        conditions = self.evaluator.evaluate(now)
        evaluate_s = time.monotonic() - started
        silences = active_silences(self.config, now)
        outgoing, events = self.notifier.advance(
            conditions, now, silences, leading=leading, skip_group_wait=skip_group_wait
        )
        with self.store.transaction() as db:
            for item in outgoing:
                n = item.notification
                enqueue(
                    db,
                    incident_key=item.incident_key,
                    seq=item.seq,
                    receiver=n.receiver,
                    kind=n.kind,
                    labels=n.group_labels,
                    body=encode_body(self._receivers[n.receiver], n),
                    now=time.time(),
                )
            Store.put_json(db, "notifier", self.notifier.dump())
            if leading:
                EventLog.add(db, events)
        self.events.flush()
        firing = sum(1 for a in self.notifier.alerts.values() if a["state"] == "firing")
        return CycleSummary(leading, len(conditions), firing, len(outgoing), evaluate_s)

    def deliver(self, budget_s: float = 10.0) -> DeliveryStats:
        """Send what is due, if this engine leads (a follower never sends)."""
        if not self.leadership.is_leader():
            return DeliveryStats()
        return self.outbox.deliver_due(budget_s)

    def step(self, now: float | None = None, skip_group_wait: bool = False) -> CycleSummary:
        summary = self.evaluate_and_notify(now, skip_group_wait)
        self.deliver()
        return summary

    def run_forever(self, stop: threading.Event) -> None:
        every = self.config.alerts.evaluate_every_s
        next_evaluation = time.monotonic()
        while not stop.is_set():
            if time.monotonic() >= next_evaluation:
                next_evaluation = time.monotonic() + every
                try:
                    log.info("alerts: %s", self.evaluate_and_notify().line())
                except Exception:
                    log.exception("alert evaluation failed; retrying in %.0f s", every)
            try:
                self.deliver(budget_s=max(1.0, every / 2))
            except Exception:
                log.exception("alert delivery pass failed")
            stop.wait(SERVE_EVERY_S)

    def close(self) -> None:
        self.leadership.close()
        self.outbox.close()
        self.evaluator.close()
        self.store.close()


class BackgroundEngine:
    """The engine on a daemon thread of a process that serves something else; `stop()` ends it cleanly."""

    def __init__(self, engine: AlertEngine) -> None:
        self.engine = engine
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="alert-engine", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self.engine.run_forever(self._stop)
        finally:
            self.engine.close()

    def stop(self, timeout_s: float = 30.0) -> None:
        self._stop.set()
        self._thread.join(timeout_s)

    def is_alive(self) -> bool:
        return self._thread.is_alive()


def start_in_background(config: Config) -> BackgroundEngine:
    """Start the engine beside another server; raises ConfigError at once for a bad rule."""
    return BackgroundEngine(AlertEngine(config))


def run(config: Config, args: argparse.Namespace) -> int:
    """`lagwatch alerts [--once]`."""
    rules = compile_rules(config.alerts)
    once = bool(getattr(args, "once", False))
    engine = AlertEngine(config, rules=rules, once=once)
    log.info("alert engine: %d rules, %d receivers", len(rules), len(config.alerts.receivers))
    try:
        if once:
            log.info("alerts --once: %s", engine.evaluate_and_notify(skip_group_wait=True).line())
            stats = engine.deliver(budget_s=60.0)
            pending = engine.outbox.pending_count()
            log.info(
                "alerts --once: delivered %d, failed attempts %d, still pending %d",
                stats.delivered,
                stats.failed_attempts,
                pending,
            )
            return 1 if pending else 0
        stop = threading.Event()
        # SIGTERM / SIGINT end the loop after the current pass (state is already persisted).
        stop_on_signals(stop, "stopping the alert engine")
        engine.run_forever(stop)
        return 0
    finally:
        engine.close()
