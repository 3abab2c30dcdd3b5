"""The one-at-a-time slot of the web app's long computations (the evaluation curve, the
analysis, the hint): a request waits a bounded time for the slot, and gives up as soon as
its client has left."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from patchsim.web.paths import WebError


def take_slot(slot: threading.Semaphore, wait: float, gone: Callable[[], bool], what: str) -> None:
    """Acquire ``slot`` within ``wait`` seconds; WebError 503 if the client left first
    (``gone``) or the server stayed busy with another ``what`` (an evaluation, an
    analysis). The caller releases the slot."""
    waited = time.monotonic() + wait
    while not slot.acquire(timeout=0.1):
        if gone():
            raise WebError(503, f"the client left before the {what} started")
        if time.monotonic() > waited:
            raise WebError(503, f"the server is busy with another {what}; try again in a "
                                "minute")
