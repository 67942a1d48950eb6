"""BoundedRequests: the in-flight limit holds, every unit comes back once, the deadline is final.

The futures here are plain concurrent.futures.Future objects completed by a real thread pool,
standing in for librdkafka's request futures (same type the AdminClient returns).
"""

from __future__ import annotations

import threading
import time
import weakref
from concurrent.futures import Future, ThreadPoolExecutor

from confluent_kafka import KafkaError, KafkaException

from collectors.admin.requests import BoundedRequests, error_text
from lagwatch.gc_pause import cyclic_gc_paused


def test_in_flight_never_exceeds_the_limit_and_every_unit_completes_once() -> None:
    lock = threading.Lock()
    in_flight = [0, 0]  # current, peak

    def work(unit: int) -> int:
        with lock:
            in_flight[0] += 1
            in_flight[1] = max(in_flight[1], in_flight[0])
        time.sleep(0.002)
        with lock:
            in_flight[0] -= 1
        return unit * 10

    with ThreadPoolExecutor(max_workers=16) as pool:
        requests = BoundedRequests(range(200), lambda u: [pool.submit(work, u)], 4, time.monotonic() + 60)
        results = {unit: futures[0].result() for unit, futures in requests}

    assert results == {u: u * 10 for u in range(200)}
    assert 1 <= in_flight[1] <= 4
    assert requests.unfinished == []


def test_a_unit_with_several_futures_completes_when_the_last_one_does() -> None:
    pending: list[Future[int]] = [Future(), Future(), Future()]
    requests = BoundedRequests(["batch"], lambda _u: pending, 2, time.monotonic() + 60)
    iterator = iter(requests)
    for index, future in enumerate(pending):
        threading.Timer(0.01 * (index + 1), future.set_result, (index,)).start()

    unit, futures = next(iterator)

    assert unit == "batch" and [f.result() for f in futures] == [0, 1, 2]


def test_units_not_answered_by_the_deadline_are_reported_unfinished() -> None:
    never_done: list[Future[int]] = []

    def submit(_unit: str) -> list[Future[int]]:
        never_done.append(Future())
        return never_done[-1:]

    requests = BoundedRequests(["a", "b", "c"], submit, 2, time.monotonic() + 0.2)

    assert list(requests) == []
    assert sorted(requests.unfinished) == ["a", "b", "c"]
    assert len(never_done) == 2  # "c" was never sent: the limit was full until the deadline


def test_a_submit_that_fails_locally_is_a_failed_unit_not_a_crash() -> None:
    def submit(_unit: str) -> list[Future[int]]:
        raise KafkaException(KafkaError(KafkaError._INVALID_ARG, "bad request"))

    [(unit, (future,))] = list(BoundedRequests(["x"], submit, 1, time.monotonic() + 60))

    assert unit == "x" and "bad request" in error_text(future.exception())


class Answer:
    """Stands in for a broker's answer (a group's committed offsets)."""


def test_an_answer_is_freed_once_used_no_reference_cycle_keeps_it() -> None:
    kept: list[weakref.ref[Answer]] = []

    def submit(unit: int) -> list[Future[Answer]]:
        futures: list[Future[Answer]] = [Future() for _ in range(1 + unit % 2)]  # one and two futures per unit
        for future in futures:
            answer = Answer()
            kept.append(weakref.ref(answer))
            threading.Timer(0.001, future.set_result, (answer,)).start()
        return futures

    with cyclic_gc_paused():  # only reference counting may free them
        for _unit, futures in BoundedRequests(range(6), submit, 2, time.monotonic() + 60):
            assert all(isinstance(f.result(), Answer) for f in futures)
        del futures
        assert len(kept) == 9 and [ref() for ref in kept] == [None] * 9
