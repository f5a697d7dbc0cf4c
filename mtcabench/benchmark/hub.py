"""Hub dataset ids, and which exceptions mean "the Hub could not be reached".

A benchmark on the Hub is named ``ORG/NAME`` or ``ORG/NAME@REVISION``; reading one (the
benchmark format) and publishing one (the release stage) share that spelling and these errors.

huggingface_hub has moved between HTTP clients (requests, httpx, its own httpx2 fork); a
connection failure surfaces as that client's error class. Catching the base class of each
one that is installed keeps the message a clean ServiceError across versions.
"""

from __future__ import annotations

import importlib
import re

#: ``ORG/NAME`` or ``ORG/NAME@REVISION`` (a tag such as the release version, a branch, a sha).
HUB_ID = re.compile(r"^(?P<repo>[A-Za-z0-9][\w.-]*/[\w.-]+)(?:@(?P<rev>[\w./+-]+))?$")


def parse_hub_id(text: str) -> tuple[str, str | None] | None:
    """``(repo_id, revision)`` when ``text`` reads as a Hub dataset id, else None."""
    m = HUB_ID.match(text)
    return (m["repo"], m["rev"]) if m else None


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
