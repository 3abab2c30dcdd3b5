"""The one-at-a-time slot of the web app's long computations (the evaluation curve, the
analysis, the hint), written once: a request waits a bounded time for the slot and gives up
as soon as its client has left; the computation then runs under a time limit, stops when
its client leaves, and the slot is released however it ends."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from patchsim.play.evaluate import EvaluationStopped
from patchsim.web.paths import WebError

log = logging.getLogger("patchsim.web")


@contextmanager
def take_slot(slot: threading.Semaphore, wait: float, cancel: threading.Event | None,
              seconds: float, what: str, advice: str,
              on_left: Callable[[], None] | None = None) -> Iterator[Callable[[], bool]]:
    """Hold ``slot`` for one ``what`` (an evaluation, an analysis) of at most ``seconds``.

    The slot is acquired within ``wait`` seconds, else WebError 503 (the client left first:
    ``cancel`` set, or the server stayed busy). The body gets ``stop()``, True once the client
    left or the time is up, for the computation to ask as it goes; when it then raises
    EvaluationStopped, that becomes WebError 503 saying which (``on_left`` is called when the
    client left; ``advice`` ends the message of a timeout). The slot is released on every
    way out."""
    def gone() -> bool:
        return cancel is not None and cancel.is_set()

    waited = time.monotonic() + wait
    while not slot.acquire(timeout=0.1):
        if gone():
            raise WebError(503, f"the client left before the {what} started")
        if time.monotonic() > waited:
            raise WebError(503, f"the server is busy with another {what}; try again in a "
                                "minute")
    try:
        deadline = time.monotonic() + seconds
        yield lambda: gone() or time.monotonic() > deadline
    except EvaluationStopped:
        if gone():
            if on_left is not None:
                on_left()
            log.info("an %s was stopped: its client left", what)
            raise WebError(503, f"the {what} was stopped: the client left") from None
        raise WebError(503, f"the {what} took more than {seconds:.0f} s and was stopped; "
                            f"{advice}") from None
    finally:
        slot.release()
