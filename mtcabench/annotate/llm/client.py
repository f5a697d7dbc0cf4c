"""The client of one endpoint, through the openai SDK, with retries that follow the server.

Requests go through the SDK (its chat, Files and Batches APIs) on an httpx client of ours,
whose connections keep to a deadline per request (:mod:`.deadline`), so that ``--timeout``
bounds a whole request. The SDK's own retries are off (``max_retries=0``): ours (tenacity)
cover rate limits (honouring ``Retry-After`` / ``retry-after-ms``), timeouts, 5xx and
408/409 answers, dropped connections and unreadable bodies, with exponential backoff and
full jitter, and they ask the embedded server whether it died before blaming the network.
A refusal that retrying cannot fix (a 4xx such as a bad key or an unknown model) stops the
run with one clear message. Everything kept from a server passes through one
:class:`~.redact.Redactor`, so that a server echoing the key cannot get it stored or shown.
"""

from __future__ import annotations

import contextlib
import random
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import Any, TypeVar

import httpx
import openai
from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception_type,
    stop_after_attempt,
    wait_random_exponential,
)

from mtcabench.annotate.llm.accounting import Accounting
from mtcabench.annotate.llm.deadline import DeadlineTransport, deadline
from mtcabench.annotate.llm.policy import (
    RequestFailed,
    RetryPolicy,
    TransientError,
    parse_retry_after,
)
from mtcabench.annotate.llm.providers import Endpoint
from mtcabench.annotate.llm.redact import Redactor
from mtcabench.annotate.llm.wire import Answer
from mtcabench.errors import ServiceError
from mtcabench.redact import clip

T = TypeVar("T")


def _server_message(response: httpx.Response) -> str:
    # Redacted before any cut: a cut through an echoed key would leave part of it behind.
    try:
        err = response.json().get("error")
        msg = err.get("message") if isinstance(err, dict) else err
    except Exception:  # noqa: BLE001 - any unreadable body: show its start
        return clip(" ".join(response.text.split()), 200) or response.reason_phrase
    return clip(str(msg or response.reason_phrase), 300)


def environment_proxy(url: str) -> str | None:
    """The proxy the environment names for ``url`` (``HTTPS_PROXY``, ``HTTP_PROXY``,
    ``ALL_PROXY``; ``NO_PROXY`` honoured): httpx reads these only for a transport of its own.
    A loopback address (the embedded server) is never proxied: no proxy could reach it."""
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    if host in ("localhost", "127.0.0.1", "::1") or urllib.request.proxy_bypass(host):
        return None
    proxies = urllib.request.getproxies()
    return proxies.get(parts.scheme) or proxies.get("all")


#: A call of the SDK's raw-response API (``sdk.chat.completions.with_raw_response...``).
Call = Callable[[Any, dict[str, Any]], Any]


class ApiClient:
    """One endpoint through the SDK, with retries; shared by the request threads and batches."""

    def __init__(self, endpoint: Endpoint, accounting: Accounting,
                 policy: RetryPolicy | None = None, *, max_connections: int = 8):
        self.endpoint = endpoint
        self.accounting = accounting
        self.policy = policy or RetryPolicy()
        self.redactor = Redactor(endpoint.secrets())
        timeout = httpx.Timeout(self.policy.timeout_s,
                                connect=min(self.policy.connect_timeout_s, self.policy.timeout_s))
        limits = httpx.Limits(max_connections=max_connections,
                              max_keepalive_connections=max_connections)
        transport = DeadlineTransport(limits=limits, proxy=environment_proxy(endpoint.base_url))
        self._http = httpx.Client(transport=transport, timeout=timeout)
        self.sdk = endpoint.sdk(endpoint, self._http, timeout)
        if self.sdk.max_retries:  # a provider's factory forgot: retries must stay ours
            self.sdk = self.sdk.with_options(max_retries=0)
        # With no key the SDK would refuse to send; omitting its header says "no auth".
        self._headers = {} if endpoint.api_key else {"Authorization": openai.omit}

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
            return min(after, self.policy.max_retry_after_s) * (1 + 0.1 * random.random())
        return wait_random_exponential(multiplier=self.policy.backoff_s,
                                       max=self.policy.max_backoff_s)(state)

    def _before_sleep(self, state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        self.accounting.retried(getattr(exc, "reason", "error"))

    def request(self, call: Call, *, what: str, parse: Callable[[httpx.Response], T],
                whole: bool = True) -> T:
        """``parse(response)`` of ``call(sdk, headers)``, sent with retries.

        ``whole``: the request must end within the policy's timeout, all of it; a batch
        file transfer (up to 190 MB) passes False and is bounded per network operation.

        A body ``parse`` cannot read (ValueError, KeyError...) counts as a retryable fault, like
        a 5xx. Gives up with RequestFailed, or ServiceError when the endpoint cannot be reached
        or refuses in a way retrying cannot fix.
        """
        retrying = Retrying(
            stop=stop_after_attempt(self.policy.max_attempts),
            wait=self._wait,
            retry=retry_if_exception_type(TransientError),
            before_sleep=self._before_sleep,
            reraise=True,
        )
        try:
            for attempt in retrying:
                with attempt:
                    response = self._send_once(call, what, whole)
                    try:
                        return parse(response)
                    except (ValueError, KeyError, IndexError, TypeError) as exc:
                        raise TransientError("bad-response",
                                             f"unreadable {what} ({type(exc).__name__})") from None
        except TransientError as exc:
            if exc.reason == "connection":
                raise ServiceError(f"cannot reach {self.endpoint.base_url} ({exc}); "
                                   f"{self.endpoint.unreachable_hint}") from None
            raise RequestFailed(exc.reason, str(exc)) from None
        raise AssertionError("unreachable")  # pragma: no cover

    def _send_once(self, call: Call, what: str, whole: bool) -> httpx.Response:
        try:
            with deadline(self.policy.timeout_s) if whole else contextlib.nullcontext():
                return call(self.sdk, self._headers).http_response
        except openai.APITimeoutError:
            self._raise_if_dead()
            raise TransientError("timeout", "no whole answer within --timeout") from None
        except openai.APIConnectionError as exc:
            self._raise_if_dead()
            cause = exc.__cause__
            reason = "connection" if isinstance(cause, httpx.ConnectError) else "dropped"
            raise TransientError(reason, type(cause or exc).__name__) from None
        except openai.APIStatusError as exc:
            raise self._status_error(exc.response, what) from None

    def _status_error(self, response: httpx.Response, what: str) -> Exception:
        status = response.status_code
        message = self.redactor.text(_server_message(response))
        if status == 429:
            return TransientError("rate-limited", message,
                                  retry_after=parse_retry_after(response.headers))
        if status >= 500 or status in (408, 409):
            return TransientError(f"http-{status}", message,
                                  retry_after=parse_retry_after(response.headers))
        hint = f" (check {self.endpoint.key_env})" if status in (401, 403) else ""
        return ServiceError(f"{self.endpoint.base_url}: {what} refused with HTTP {status}: "
                            f"{message}{hint}")

    def _raise_if_dead(self, grace_s: float = 2.0) -> None:
        """Stop the run when the endpoint is our own server and its process has died.

        The connection drops a moment before the dying process is reaped, so a short grace
        lets the exit show; a live server costs the caller that grace only on a failure.
        """
        liveness = self.endpoint.liveness
        if liveness is None:
            return
        end = time.monotonic() + grace_s
        while True:
            why = liveness()
            if why is not None:
                raise ServiceError(why)
            if time.monotonic() >= end:
                return
            time.sleep(0.1)

    # ------------------------------------------------------------------ what is sent
    def json(self, response: httpx.Response) -> Any:
        """A response's JSON body with every secret redacted (ValueError if not JSON)."""
        return self.redactor.redact(response.json())

    def chat(self, body: dict[str, Any]) -> Answer:
        """One chat completion, with retries; counts the tokens it used."""
        # model and messages as the SDK's own arguments, the rest as they are: the JSON the
        # server gets is the body the cache key was computed from.
        rest = {k: v for k, v in body.items() if k not in ("model", "messages")}

        def call(sdk: Any, headers: dict[str, Any]) -> Any:
            return sdk.chat.completions.with_raw_response.create(
                model=body["model"], messages=body["messages"], extra_body=rest,
                extra_headers=headers)

        answer = self.request(call, what="chat completion",
                              parse=lambda r: Answer.from_completion(self.json(r)))
        self.accounting.answered(answer.prompt_tokens, answer.completion_tokens)
        return answer
