"""The response cache: every answer paid for, keyed by everything that shapes it.

Keys are :func:`~.wire.request_key` (the endpoint identity, the model, the exact body, and
what the layers above add, such as the prompt template's version and hash). The API key is
never part of one, and answers are redacted before they get here. Answers are committed one
by one in SQLite (WAL journal) as they arrive, so a crash loses at most the requests still in
flight, and a rerun sends no request it already has an answer to. The file is created with
the first answer: a run refused before any answer leaves no cache behind.

A damaged cache is never a traceback. Each row is checked as it is read: a row that is not
JSON or not an answer's shape (edited by hand, written by another tool) is a miss, counted in
:attr:`ResponseCache.damaged` (the run summary prints it), and its request is sent again and
its row replaced. A file that is not an SQLite database, or whose pages are garbled (SQLite's
quick check runs when the file is opened), is refused before any request with one line naming
the file and what to do: move it away, and the rerun pays again only for what it held.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from mtcabench.annotate.llm.wire import Answer
from mtcabench.errors import InputError


class ResponseCache:
    """A SQLite file of answers by request key; safe to share between threads."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        if not self.path.parent.is_dir():
            raise InputError(f"{self.path}: folder {self.path.parent} does not exist")
        self._db: sqlite3.Connection | None = None
        self._lock = threading.Lock()
        self._damaged: set[str] = set()

    @property
    def damaged(self) -> int:
        """Rows read that were not an answer (each a miss, its request sent again)."""
        return len(self._damaged)

    def _refuse(self, exc: Exception) -> InputError:
        return InputError(f"{self.path}: the response cache is damaged ({exc}); move it away "
                          f"(mv {self.path} {self.path}.damaged) and rerun: answers it held "
                          "are requested again")

    def _connect(self, create: bool) -> sqlite3.Connection | None:
        """The database (opened on first need; None while there is none and none is needed)."""
        if self._db is None and (create or self.path.exists()):
            existed = self.path.exists()
            try:
                db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
                if existed and (check := db.execute("PRAGMA quick_check").fetchone()[0]) != "ok":
                    db.close()
                    found = [ln.strip() for ln in check.splitlines() if "***" not in ln]
                    raise sqlite3.DatabaseError(f"garbled pages: {(found or [check])[0]}")
                db.execute("PRAGMA journal_mode=WAL")
                # NORMAL in WAL mode survives a killed process (not a power cut), at a fraction
                # of the cost of a full fsync per answer.
                db.execute("PRAGMA synchronous=NORMAL")
                db.execute("CREATE TABLE IF NOT EXISTS answers ("
                           "key TEXT PRIMARY KEY, created REAL NOT NULL, answer TEXT NOT NULL)")
            except sqlite3.DatabaseError as exc:
                if isinstance(exc, sqlite3.OperationalError) and not existed:
                    raise  # the machine's fault (a full disk, no permission), not the file's
                raise self._refuse(exc) from None
            self._db = db
        return self._db

    def get(self, key: str) -> Answer | None:
        """The answer stored for ``key``; None when there is none or its row is damaged."""
        with self._lock:
            db = self._connect(create=False)
            try:
                row = db.execute("SELECT answer FROM answers WHERE key = ?",
                                 (key,)).fetchone() if db else None
            except sqlite3.DatabaseError as exc:
                if type(exc) is not sqlite3.DatabaseError:  # locked, disk I/O: not damage
                    raise
                raise self._refuse(exc) from None
            if row is None:
                return None
            answer = answer_of(row[0])
            if answer is None:
                self._damaged.add(key)
            return answer

    def __contains__(self, key: str) -> bool:
        return self.get(key) is not None

    def put(self, key: str, answer: Answer) -> None:
        data = json.dumps(asdict(answer), ensure_ascii=False)
        with self._lock:
            self._connect(create=True).execute("INSERT OR REPLACE INTO answers VALUES (?, ?, ?)",
                                               (key, time.time(), data))

    def __len__(self) -> int:
        with self._lock:
            db = self._connect(create=False)
            return db.execute("SELECT COUNT(*) FROM answers").fetchone()[0] if db else 0

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None

    def __enter__(self) -> ResponseCache:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


#: The fields of a stored answer and the types each may hold.
_FIELD_TYPES: dict[str, tuple[type, ...]] = {
    "content": (str,), "finish_reason": (str, type(None)), "prompt_tokens": (int,),
    "completion_tokens": (int,), "model": (str, type(None)),
}


def answer_of(text: Any) -> Answer | None:
    """The Answer a stored row holds, or None when it is not one (not JSON, another shape)."""
    if not isinstance(text, str):
        return None
    try:
        data = json.loads(text)
    except ValueError:  # JSONDecodeError, and a row that is not UTF-8 text
        return None
    if not isinstance(data, dict) or "content" not in data or not set(data) <= set(_FIELD_TYPES):
        return None
    for name, value in data.items():
        if isinstance(value, bool) or not isinstance(value, _FIELD_TYPES[name]):
            return None
    if data.get("prompt_tokens", 0) < 0 or data.get("completion_tokens", 0) < 0:
        return None
    return Answer(**data)
