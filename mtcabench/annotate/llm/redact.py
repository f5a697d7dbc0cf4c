"""The transport's redaction: the project's one (:mod:`mtcabench.redact`), seen from here.

Everything the transport keeps from a server (answers before they are cached and become
``raw_output``, error messages, batch metadata) passes through :meth:`Redactor.redact`, which
replaces every secret the process holds, in any spelling (plain, ``\\uXXXX``, URL-encoded).
"""

from __future__ import annotations

from mtcabench.redact import REDACTED, Redactor

__all__ = ["REDACTED", "Redactor"]
