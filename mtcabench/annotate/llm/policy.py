"""The retry policy of a request (its defaults are every entry point's) and the failures it sorts.

Kept apart from the SDK client so that the options, the CLI and the executor can read the
policy without importing the openai SDK (a second of start-up).
"""

from __future__ import annotations

import email.utils
import time
from dataclasses import dataclass

import httpx


@dataclass(frozen=True)
class RetryPolicy:
    """How long a request may take and how it is retried (the defaults of every entry point)."""

    #: Seconds for a whole request: connect, send and every byte of the answer.
    timeout_s: float = 300.0
    #: Of which connecting may take at most (a server that is not there fails fast).
    connect_timeout_s: float = 30.0
    #: Tries per request, the first included.
    max_attempts: int = 6
    #: Base of the exponential backoff (with full jitter) between tries.
    backoff_s: float = 1.0
    max_backoff_s: float = 60.0
    #: Longest Retry-After honoured; a longer one is capped (and the attempt still counts).
    max_retry_after_s: float = 300.0


class TransientError(Exception):
    """A failure worth retrying; ``reason`` names it in the summary."""

    def __init__(self, reason: str, detail: str = "", retry_after: float | None = None):
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.retry_after = retry_after


class RequestFailed(Exception):
    """A request given up after every retry; the item is left for a rerun."""

    def __init__(self, reason: str, detail: str):
        super().__init__(f"{reason}: {detail}")
        self.reason = reason


def parse_retry_after(headers: httpx.Headers) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``retry-after`` (seconds or an HTTP date)."""
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())
