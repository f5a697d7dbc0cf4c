"""Running chat requests: cache first, then the endpoint, with a bounded number in flight.

The layer above submits requests with a callback and calls :meth:`RequestExecutor.wait` to get
callbacks run, always on its own (main) thread, so that writing records needs no lock. A cache
hit is answered at once without a thread; a request identical to one in flight waits for
that one's answer instead of being sent twice. A miss is sent from a pool of ``concurrency``
threads, its answer committed to the cache before the callback runs (a crash after that
loses nothing paid for), unless the executor *collects* misses for the Batch API instead.
Before a miss is sent the budget guard reserves its worst case; once a request does not fit,
nothing more is sent and the caller winds down.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from mtcabench.annotate.llm.accounting import Accounting
from mtcabench.annotate.llm.cache import ResponseCache
from mtcabench.annotate.llm.policy import RequestFailed
from mtcabench.annotate.llm.wire import Answer, ChatRequest

if TYPE_CHECKING:
    from mtcabench.annotate.llm.client import ApiClient


@dataclass(frozen=True)
class NotAnswered:
    """A request with no answer in this run: ``failed`` (after retries), ``budget`` (not
    sent, the budget would not allow it) or ``deferred`` (collected for the Batch API)."""

    why: str
    detail: str = ""


Outcome = Answer | NotAnswered
Callback = Callable[[Outcome], None]


@dataclass
class _InFlight:
    """A request in flight, and everyone waiting for its answer."""

    key: str
    callbacks: list[Callback]
    reservation: tuple[int, float]


class Collector(Protocol):
    """Where misses go instead of the endpoint (the Batch API's request file)."""

    def add(self, request: ChatRequest) -> None: ...


class RequestExecutor:
    """Cache, budget and a thread pool between the caller and one endpoint."""

    def __init__(self, cache: ResponseCache, accounting: Accounting,
                 client: ApiClient | None = None, *, concurrency: int = 4,
                 collector: Collector | None = None,
                 on_progress: Callable[[], None] | None = None):
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.cache = cache
        self.accounting = accounting
        self.client = client
        self.collector = collector
        self.concurrency = concurrency
        self.on_progress = on_progress or (lambda: None)
        self._pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="llm")
        self._pending: dict[Future, _InFlight] = {}
        self._by_key: dict[str, Future] = {}
        #: Set once the budget refused a request: the caller stops opening new work.
        self.stopping = False

    @property
    def in_flight(self) -> int:
        return len(self._pending)

    def submit(self, request: ChatRequest, callback: Callback) -> None:
        """Answer from the cache now, or send (or collect) the request; ``callback`` gets it."""
        cached = self.cache.get(request.key)
        if cached is not None:
            self.accounting.hit()
            self.on_progress()
            callback(cached)
            return
        same = self._by_key.get(request.key)
        if same is not None:  # the very same request is in flight: share its answer
            self._pending[same].callbacks.append(callback)
            return
        if self.stopping:
            callback(NotAnswered("budget", "budget reached earlier in this run"))
            return
        reservation = self.accounting.reserve(request.prompt_chars, request.max_tokens)
        if reservation is None:
            self.stopping = True
            callback(NotAnswered("budget", "the next request could cross the budget"))
            return
        if self.collector is not None:
            self.collector.add(request)
            callback(NotAnswered("deferred", "collected for the Batch API"))
            return
        if self.client is None:
            raise RuntimeError("no endpoint to send uncached requests to")
        future = self._pool.submit(self._send, request)
        self._pending[future] = _InFlight(request.key, [callback], reservation)
        self._by_key[request.key] = future

    def _send(self, request: ChatRequest) -> Answer:
        answer = self.client.chat(request.body)
        self.cache.put(request.key, answer)  # committed before anyone acts on it
        return answer

    def wait(self) -> None:
        """Block until at least one request in flight is done and run its callback."""
        if not self._pending:
            return
        done, _ = wait(list(self._pending), return_when=FIRST_COMPLETED)
        for future in done:
            flight = self._pending.pop(future)
            del self._by_key[flight.key]
            self.accounting.release(flight.reservation)
            try:
                outcome: Outcome = future.result()
            except RequestFailed as exc:
                self.accounting.failed(exc.reason)
                outcome = NotAnswered("failed", str(exc))
            except BaseException:
                self.shutdown(cancel=True)
                raise
            for i, callback in enumerate(flight.callbacks):
                if i and isinstance(outcome, Answer):
                    self.accounting.hit()  # answered by the shared request: as from the cache
                self.on_progress()
                callback(outcome)

    def drain(self) -> None:
        while self._pending:
            self.wait()

    def shutdown(self, cancel: bool = False) -> None:
        if cancel:
            for future in self._pending:
                future.cancel()
        self._pool.shutdown(wait=True, cancel_futures=cancel)

    def __enter__(self) -> RequestExecutor:
        return self

    def __exit__(self, exc_type, *exc) -> None:
        self.shutdown(cancel=exc_type is not None)
