"""A deadline for a whole request: connect, send and every byte of the answer.

httpx's timeouts bound each network operation, not a request: a server that sends its answer
one byte at a time resets the read timeout with every byte and can hold a request for as long
as it likes. Here every socket operation made inside :func:`deadline` gets at most the time
left until the deadline, and none starts after it (``httpx.ReadTimeout`` and its kin, which the
openai SDK reports as a timeout). The bound is per thread, so that the request threads of one
client each keep their own.

The wrappers follow the network-backend interface of httpcore, the connection pool inside
httpx's transport (connect_tcp, read, write, start_tls...), without importing it: httpcore is
httpx's business, not a dependency of ours.
"""

from __future__ import annotations

import contextlib
import ssl
import threading
import time
from collections.abc import Iterable, Iterator
from typing import Any

import httpx

_local = threading.local()


@contextlib.contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Every socket operation of this thread inside the block ends ``seconds`` from now."""
    previous = getattr(_local, "at", None)
    _local.at = time.monotonic() + seconds
    try:
        yield
    finally:
        _local.at = previous


def _bounded(timeout: float | None, late: type[Exception]) -> float | None:
    """The timeout for one socket operation: the operation's own, or the time left if less."""
    at = getattr(_local, "at", None)
    if at is None:
        return timeout
    left = at - time.monotonic()
    if left <= 0:
        raise late("the request's deadline passed")
    return left if timeout is None else min(timeout, left)


class _Stream:
    """A connection whose reads and writes stop at the current thread's deadline."""

    def __init__(self, inner: Any):
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _bounded(timeout, httpx.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _bounded(timeout, httpx.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: str | None = None,
                  timeout: float | None = None) -> _Stream:
        return _Stream(self._inner.start_tls(ssl_context, server_hostname,
                                             _bounded(timeout, httpx.ConnectTimeout)))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _Backend:
    """Opens connections that keep to the deadline (a kept-alive one too, on its next use)."""

    def __init__(self, inner: Any):
        self._inner = inner

    def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                    local_address: str | None = None,
                    socket_options: Iterable[Any] | None = None) -> _Stream:
        return _Stream(self._inner.connect_tcp(host, port, _bounded(timeout, httpx.ConnectTimeout),
                                               local_address, socket_options))

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: Iterable[Any] | None = None) -> _Stream:
        return _Stream(self._inner.connect_unix_socket(
            path, _bounded(timeout, httpx.ConnectTimeout), socket_options))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


class DeadlineTransport(httpx.HTTPTransport):
    """httpx's own transport (same pool, proxies, TLS) on connections that keep to
    :func:`deadline`."""

    def __init__(self, **kwargs: Any):
        super().__init__(**kwargs)
        # httpx does not take a network backend; its pool (httpcore) does. Without this the
        # deadline would silently not hold, so a changed httpx is an error, not a fallback.
        pool = getattr(self, "_pool", None)
        if not hasattr(getattr(pool, "_network_backend", None), "connect_tcp"):
            raise RuntimeError("this httpx/httpcore version keeps its connection pool "
                               "elsewhere: the request deadline cannot be installed")
        pool._network_backend = _Backend(pool._network_backend)
