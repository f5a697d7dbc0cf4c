"""Which exceptions mean "the Hub could not be reached", whatever HTTP client huggingface_hub uses.

huggingface_hub has moved between HTTP clients (requests, httpx, its own httpx2 fork); a
connection failure surfaces as that client's error class. Catching the base class of each
one that is installed keeps the message a clean ServiceError across versions.
"""

from __future__ import annotations

import importlib


def transport_errors() -> tuple[type[BaseException], ...]:
    errors: list[type[BaseException]] = [OSError]
    for module, name in (("httpx2", "HTTPError"), ("httpx", "HTTPError"),
                         ("requests", "RequestException")):
        try:
            errors.append(getattr(importlib.import_module(module), name))
        except (ImportError, AttributeError):
            continue
    return tuple(errors)


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
