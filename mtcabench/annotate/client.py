"""A small client for any OpenAI-compatible endpoint, with retries that follow the server.

It speaks plain HTTP (httpx) rather than through an SDK so that the exact body sent is the
one the cache key is computed from, and so that a 429's ``Retry-After`` is honoured. Retries
(tenacity) cover rate limits, timeouts, 5xx answers, dropped connections and unreadable
bodies, with exponential backoff and full jitter. A refusal that retrying cannot fix (a 4xx
such as a bad key or an unknown model) stops the run with one clear message; the API key
only ever travels in the ``Authorization`` header and is never part of a message.
"""

from __future__ import annotations

import email.utils
import os
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import httpx
from pydantic import SecretStr
from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception_type,
    stop_after_attempt,
    wait_random_exponential,
)

from mtcabench.annotate.accounting import Accounting
from mtcabench.annotate.cache import Answer
from mtcabench.errors import ServiceError

OPENAI_BASE_URL = "https://api.openai.com/v1"
API_KEY_ENV = "OPENAI_API_KEY"

T = TypeVar("T")


def api_key_from_env() -> SecretStr | None:
    """The API key from ``OPENAI_API_KEY`` (the only place it is read from), or None."""
    value = os.environ.get(API_KEY_ENV, "").strip()
    return SecretStr(value) if value else None


@dataclass(frozen=True)
class Endpoint:
    """Where requests go and how to retry them."""

    base_url: str
    model: str
    #: Identity of the endpoint in cache keys (the base URL unless the server is the embedded
    #: one, whose port changes from run to run while its answers do not).
    identity: str = ""
    api_key: SecretStr | None = field(default=None, repr=False)
    response_format: str = "json_schema"
    timeout_s: float = 300.0
    max_attempts: int = 6
    backoff_s: float = 1.0
    max_backoff_s: float = 60.0
    #: Longest Retry-After we honour; a longer one is capped (and the attempt still counts).
    max_retry_after_s: float = 300.0
    #: For a server we started ourselves: says why its process is gone (None while it runs),
    #: so that a dropped connection to our own crashed child is reported as that crash.
    liveness: Callable[[], str | None] | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "base_url", self.base_url.rstrip("/"))
        if not self.identity:
            object.__setattr__(self, "identity", self.base_url)


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


def _server_message(response: httpx.Response) -> str:
    try:
        err = response.json().get("error")
        msg = err.get("message") if isinstance(err, dict) else err
    except Exception:  # noqa: BLE001 - any unreadable body: show its start
        msg = response.text[:200]
    return str(msg or response.reason_phrase)[:300]


class ApiClient:
    """HTTP to one endpoint with retries; shared by the request threads and the Batch API."""

    def __init__(self, endpoint: Endpoint, accounting: Accounting, *, max_connections: int = 8):
        self.endpoint = endpoint
        self.accounting = accounting
        headers = {"User-Agent": "mtcabench"}
        if endpoint.api_key is not None:
            headers["Authorization"] = f"Bearer {endpoint.api_key.get_secret_value()}"
        self._http = httpx.Client(
            base_url=endpoint.base_url,
            headers=headers,
            timeout=httpx.Timeout(endpoint.timeout_s, connect=min(30.0, endpoint.timeout_s)),
            limits=httpx.Limits(max_connections=max_connections,
                                max_keepalive_connections=max_connections),
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> ApiClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------------ retries
    def _wait(self, state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        after = getattr(exc, "retry_after", None)
        if after is not None:
            # The server said when; add a little jitter so that threads do not return together.
            return min(after, self.endpoint.max_retry_after_s) * (1 + 0.1 * random.random())
        return wait_random_exponential(multiplier=self.endpoint.backoff_s,
                                       max=self.endpoint.max_backoff_s)(state)

    def _before_sleep(self, state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        self.accounting.retried(getattr(exc, "reason", "error"))

    def request(self, method: str, path: str, *, what: str,
                parse: Callable[[httpx.Response], T] | None = None, **kwargs: Any) -> T:
        """Send with retries and return ``parse(response)`` (the response itself by default).

        A body ``parse`` cannot read (ValueError, KeyError...) counts as a retryable fault, like
        a 5xx. Gives up with RequestFailed, or ServiceError when the endpoint cannot be reached
        or refuses in a way retrying cannot fix.
        """
        retrying = Retrying(
            stop=stop_after_attempt(self.endpoint.max_attempts),
            wait=self._wait,
            retry=retry_if_exception_type(TransientError),
            before_sleep=self._before_sleep,
            reraise=True,
        )
        try:
            for attempt in retrying:
                with attempt:
                    response = self._send_once(method, path, what=what, **kwargs)
                    if parse is None:
                        return response  # type: ignore[return-value]
                    try:
                        return parse(response)
                    except (ValueError, KeyError, IndexError, TypeError) as exc:
                        raise TransientError("bad-response",
                                             f"unreadable {what} ({type(exc).__name__})") from None
        except TransientError as exc:
            if exc.reason == "connection":
                raise ServiceError(
                    f"cannot reach {self.endpoint.base_url} ({exc}); is the server running? "
                    "Check --base-url") from None
            raise RequestFailed(exc.reason, str(exc)) from None
        raise AssertionError("unreachable")  # pragma: no cover

    def _send_once(self, method: str, path: str, *, what: str, **kwargs: Any) -> httpx.Response:
        try:
            response = self._http.request(method, path, **kwargs)
        except httpx.TimeoutException as exc:
            self._raise_if_dead()
            raise TransientError("timeout", type(exc).__name__) from None
        except (httpx.ConnectError, httpx.RemoteProtocolError, httpx.ReadError,
                httpx.WriteError) as exc:
            self._raise_if_dead()
            reason = "connection" if isinstance(exc, httpx.ConnectError) else "dropped"
            raise TransientError(reason, type(exc).__name__) from None
        status = response.status_code
        if status == 429:
            raise TransientError("rate-limited", _server_message(response),
                                 retry_after=parse_retry_after(response.headers))
        if status >= 500 or status in (408, 409):
            raise TransientError(f"http-{status}", _server_message(response),
                                 retry_after=parse_retry_after(response.headers))
        if status >= 400:
            hint = " (check OPENAI_API_KEY)" if status in (401, 403) else ""
            raise ServiceError(f"{self.endpoint.base_url}: {what} refused with HTTP {status}: "
                               f"{_server_message(response)}{hint}")
        return response

    def _raise_if_dead(self, grace_s: float = 2.0) -> None:
        """Stop the run when the endpoint is our own server and its process has died.

        The connection drops a moment before the dying process is reaped, so a short grace
        lets the exit show; a live server costs the caller that grace only on a failure.
        """
        liveness = self.endpoint.liveness
        if liveness is None:
            return
        deadline = time.monotonic() + grace_s
        while True:
            why = liveness()
            if why is not None:
                raise ServiceError(why)
            if time.monotonic() >= deadline:
                return
            time.sleep(0.1)

    # ------------------------------------------------------------------ chat
    def chat(self, body: dict[str, Any]) -> Answer:
        """One chat completion, with retries; counts the tokens it used."""
        answer = self.request("POST", "/chat/completions", what="chat completion", json=body,
                              parse=lambda r: Answer.from_completion(r.json()))
        self.accounting.answered(answer.prompt_tokens, answer.completion_tokens)
        return answer
