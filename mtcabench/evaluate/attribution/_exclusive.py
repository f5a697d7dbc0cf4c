"""One pass at a time over a shared model.

The attention scorers read a layer's input through hooks registered on the model's own
attention modules, and a hook fires for *every* forward pass through that module, whichever
thread runs it. The online Tracer runs its passes in a background thread, so an offline
Attributor (or a second Tracer) sharing the loaded model would otherwise see the other
pass's hidden states in its hooks. Every pass (hooked or not: a plain pass would still fire
the other thread's hooks) holds its model's lock from registering its hooks to removing them.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager

_LOCKS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_GUARD = threading.Lock()


def model_lock(model) -> threading.RLock:
    """The re-entrant lock of ``model`` (one per model object, dropped with it)."""
    with _GUARD:
        lock = _LOCKS.get(model)
        if lock is None:
            lock = _LOCKS[model] = threading.RLock()
        return lock


@contextmanager
def exclusive(model) -> Iterator[None]:
    """Hold ``model``'s lock: no other thread runs a pass over it (or hooks it) meanwhile."""
    with model_lock(model):
        yield
