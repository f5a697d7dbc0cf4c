"""What crosses the transport boundary: a chat request (body, key, sizes) and its answer.

The transport never looks inside a request beyond what the OpenAI chat API defines: the
layers above build the body, and the cache key is computed here from the body plus whatever
else they say shapes the answer (a prompt template's version and hash, say), so that the
transport needs to know nothing about prompts or phases.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any


def request_key(*, endpoint: str, model: str, body: dict[str, Any], **shaping: str) -> str:
    """The cache key of one chat request: sha256 of everything that shapes its answer.

    ``body`` is the JSON body sent (it never holds the API key); ``shaping`` adds what the
    body does not show, such as ``prompt_version`` and ``prompt_hash``. The key of a given
    request is stable across releases: caches written before stay valid.
    """
    canonical = json.dumps({"endpoint": endpoint, "model": model, "body": body, **shaping},
                           sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class ChatRequest:
    """One chat request ready to send or to look up: an opaque body, its key and its sizes."""

    key: str
    body: dict[str, Any]
    #: Characters of the messages (the budget guard estimates tokens from them).
    prompt_chars: int
    #: The answer limit (the worst case the budget guard reserves).
    max_tokens: int

    @classmethod
    def build(cls, body: dict[str, Any], *, endpoint: str, **shaping: str) -> ChatRequest:
        """The request for a chat-completion ``body`` sent to ``endpoint`` (its identity)."""
        key = request_key(endpoint=endpoint, model=body["model"], body=body, **shaping)
        chars = sum(len(m["content"]) for m in body["messages"])
        return cls(key=key, body=body, prompt_chars=chars, max_tokens=body["max_tokens"])


@dataclass(frozen=True)
class Answer:
    """What we keep of a chat completion: the text, why it stopped, and the tokens used."""

    content: str
    finish_reason: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    model: str | None = None

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @classmethod
    def from_completion(cls, body: dict[str, Any]) -> Answer:
        """From an OpenAI chat-completion response body; KeyError/TypeError if it is not one."""
        choice = body["choices"][0]
        usage = body.get("usage") or {}
        return cls(
            content=choice["message"].get("content") or "",
            finish_reason=choice.get("finish_reason"),
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            completion_tokens=int(usage.get("completion_tokens") or 0),
            model=body.get("model"),
        )
