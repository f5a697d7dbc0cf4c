"""Keeping secrets out of what is stored or shown: one redaction for every server text.

A server controls what it answers, and a hostile or buggy one may echo the request's
``Authorization`` header (or the key anywhere) back in its answer, its error messages or its
batch files. Everything the transport keeps from a server (answers before they are cached
and become ``raw_output``, error messages, batch metadata) passes through :meth:`Redactor.redact`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

T = TypeVar("T")

#: What a secret is replaced with.
REDACTED = "[redacted]"


class Redactor:
    """Replaces each of a set of secrets (API keys) wherever it occurs in text or JSON."""

    def __init__(self, secrets: Iterable[str | None] = ()):
        # Longest first, so that a key containing another is replaced whole.
        self.secrets = sorted({s for s in secrets if s}, key=len, reverse=True)

    def __bool__(self) -> bool:
        return bool(self.secrets)

    def text(self, value: str) -> str:
        for secret in self.secrets:
            if secret in value:
                value = value.replace(secret, REDACTED)
        return value

    def redact(self, value: T) -> T:
        """``value`` with every secret replaced: strings, and dicts/lists of them, deeply."""
        if not self.secrets:
            return value
        if isinstance(value, str):
            return self.text(value)  # type: ignore[return-value]
        if isinstance(value, dict):
            return {self.redact(k): self.redact(v) for k, v in value.items()}  # type: ignore[return-value]
        if isinstance(value, list):
            return [self.redact(v) for v in value]  # type: ignore[return-value]
        return value

