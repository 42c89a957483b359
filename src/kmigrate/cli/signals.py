"""Commands that run until stopped (`groups sync`, `migrate status --watch`): SIGINT and
SIGTERM set an event the command's loop waits on, so it ends cleanly at its next step.

Both are handled explicitly: a process started by a CI runner or a test worker inherits
SIGINT ignored, and a supervisor or `timeout` stops with SIGTERM.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def stop_on_signals(stop: threading.Event) -> Iterator[list[int]]:
    """Within the block, SIGINT and SIGTERM set ``stop`` (the list it gives holds the
    signals received); the handlers from before it after."""
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    received: list[int] = []

    def handle(signum: int, _frame: object) -> None:
        received.append(signum)
        stop.set()

    for sig in previous:
        signal.signal(sig, handle)
    try:
        yield received
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
