"""The Tracer's background worker: a thread that runs a job of its owner each time it is woken.

The thread holds its owner weakly: an owner nobody uses any more is collected (its model and
cache freed) and the thread ends. It is stopped *and joined* when the owner closes it, when the
owner is collected, and at interpreter exit: a daemon thread still inside a forward pass when
the interpreter finalises aborts the process ('terminate called without an active exception',
signal 6) after the script's last line ran. Joining waits for the pass in progress (seconds at
most), never for one not started.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable


class Worker:
    """Runs ``job(owner)`` in a thread of its own after each :meth:`wake`, while the owner lives."""

    def __init__(self, owner: object, job: Callable[[object], None], name: str):
        self._ref = weakref.ref(owner)
        self._job = job
        self._name = name
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._finalizer: weakref.finalize | None = None

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def wake(self) -> None:
        """Start the thread if needed and have it run the job once more."""
        if not self.alive:
            self._stop.clear()
            self._thread = threading.Thread(target=_run, args=(self._ref, self._job, self._wake,
                                                               self._stop),
                                            name=self._name, daemon=True)
            if self._finalizer is not None:
                self._finalizer.detach()
            # Called when the owner is collected, or at exit (weakref.finalize's atexit hook).
            self._finalizer = weakref.finalize(self._ref() or self, _stop_and_join,
                                               self._wake, self._stop, self._thread)
            self._thread.start()
        self._wake.set()

    def stop(self) -> None:
        """Stop the thread, waiting for a job in progress to end."""
        if self._finalizer is not None:
            self._finalizer()
        else:
            _stop_and_join(self._wake, self._stop, self._thread)


def _run(ref: weakref.ref, job: Callable[[object], None], wake: threading.Event,
         stop: threading.Event) -> None:
    while True:
        wake.wait()
        if stop.is_set():
            return
        wake.clear()
        owner = ref()
        if owner is None:
            return
        job(owner)
        del owner


def _stop_and_join(wake: threading.Event, stop: threading.Event,
                   thread: threading.Thread | None) -> None:
    stop.set()
    wake.set()
    # The owner may be collected in the worker itself (it drops the last reference): a thread
    # cannot join itself, and it ends on its own at the stop flag.
    if thread is not None and thread is not threading.current_thread() and thread.is_alive():
        thread.join()
