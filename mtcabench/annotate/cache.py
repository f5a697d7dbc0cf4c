"""The response cache: every answer paid for, keyed by everything that shapes it.

The key is the sha256 of the canonical JSON of the endpoint identity, the model, the prompt
template's version and hash, the messages, the response format (with its schema) and the
sampling settings. The API key is never part of it, and nothing the cache stores holds it.
Answers are committed one by one in SQLite (WAL journal) as they arrive, so a crash loses at
most the requests still in flight, and a rerun sends no request it already has an answer to.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from mtcabench.errors import InputError


def request_key(*, endpoint: str, model: str, prompt_version: str, prompt_hash: str,
                body: dict[str, Any]) -> str:
    """The cache key of one chat request (``body`` is the JSON body sent, without the key)."""
    shaping = {
        "endpoint": endpoint,
        "model": model,
        "prompt_version": prompt_version,
        "prompt_hash": prompt_hash,
        "body": body,  # messages, response_format (schema), temperature, max_tokens, seed
    }
    canonical = json.dumps(shaping, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


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


class ResponseCache:
    """A SQLite file of answers by request key; safe to share between threads."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        if not self.path.parent.is_dir():
            raise InputError(f"{self.path}: folder {self.path.parent} does not exist")
        try:
            self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            # NORMAL in WAL mode survives a killed process (not a power cut), at a fraction
            # of the cost of a full fsync per answer.
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute("CREATE TABLE IF NOT EXISTS answers ("
                             "key TEXT PRIMARY KEY, created REAL NOT NULL, answer TEXT NOT NULL)")
        except sqlite3.DatabaseError as exc:
            raise InputError(f"{self.path}: not a usable response cache ({exc}); "
                             "remove it or pass another --cache") from None
        self._lock = threading.Lock()

    def get(self, key: str) -> Answer | None:
        with self._lock:
            row = self._db.execute("SELECT answer FROM answers WHERE key = ?", (key,)).fetchone()
        return Answer(**json.loads(row[0])) if row else None

    def __contains__(self, key: str) -> bool:
        with self._lock:
            return self._db.execute("SELECT 1 FROM answers WHERE key = ?",
                                    (key,)).fetchone() is not None

    def put(self, key: str, answer: Answer) -> None:
        data = json.dumps(asdict(answer), ensure_ascii=False)
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO answers VALUES (?, ?, ?)",
                             (key, time.time(), data))

    def __len__(self) -> int:
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM answers").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> ResponseCache:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
