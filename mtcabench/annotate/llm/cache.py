"""The response cache: every answer paid for, keyed by everything that shapes it.

Keys are :func:`~.wire.request_key` (the endpoint identity, the model, the exact body, and
what the layers above add, such as the prompt template's version and hash). The API key is
never part of one, and answers are redacted before they get here. Answers are committed one
by one in SQLite (WAL journal) as they arrive, so a crash loses at most the requests still in
flight, and a rerun sends no request it already has an answer to. The file is created with
the first answer: a run refused before any answer leaves no cache behind.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from dataclasses import asdict
from pathlib import Path

from mtcabench.annotate.llm.wire import Answer
from mtcabench.errors import InputError, NoSpace, from_os_error


class ResponseCache:
    """A SQLite file of answers by request key; safe to share between threads."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        if not self.path.parent.is_dir():
            raise InputError(f"{self.path}: folder {self.path.parent} does not exist")
        self._db: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    def _connect(self, create: bool) -> sqlite3.Connection | None:
        """The database (opened on first need; None while there is none and none is needed)."""
        if self._db is None and (create or self.path.exists()):
            try:
                db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
                db.execute("PRAGMA journal_mode=WAL")
                # NORMAL in WAL mode survives a killed process (not a power cut), at a fraction
                # of the cost of a full fsync per answer.
                db.execute("PRAGMA synchronous=NORMAL")
                db.execute("CREATE TABLE IF NOT EXISTS answers ("
                           "key TEXT PRIMARY KEY, created REAL NOT NULL, answer TEXT NOT NULL)")
            except sqlite3.DatabaseError as exc:
                _raise_if_full(exc, self.path)
                raise InputError(f"{self.path}: not a usable response cache ({exc}); "
                                 "remove it or pass another --cache") from None
            self._db = db
        return self._db

    def get(self, key: str) -> Answer | None:
        with self._lock:
            db = self._connect(create=False)
            row = db.execute("SELECT answer FROM answers WHERE key = ?",
                             (key,)).fetchone() if db else None
        return Answer(**json.loads(row[0])) if row else None

    def __contains__(self, key: str) -> bool:
        return self.get(key) is not None

    def put(self, key: str, answer: Answer) -> None:
        data = json.dumps(asdict(answer), ensure_ascii=False)
        with self._lock:
            try:
                self._connect(create=True).execute(
                    "INSERT OR REPLACE INTO answers VALUES (?, ?, ?)", (key, time.time(), data))
            except sqlite3.OperationalError as exc:
                _raise_if_full(exc, self.path)
                raise

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


def _raise_if_full(exc: sqlite3.Error, path: Path) -> None:
    """A full disk is :class:`NoSpace` naming the cache (answers committed before it are kept).

    SQLite says "database or disk is full" when the file cannot grow, but only "disk I/O
    error" when its journal cannot be created: that one counts as full where the disk has
    (almost) nothing left.
    """
    io_error = getattr(exc, "sqlite_errorname", "").startswith("SQLITE_IOERR")
    if isinstance(from_os_error(exc), NoSpace) or (io_error and _nearly_full(path.parent)):
        raise NoSpace(f"{path}: no space left for the response cache ({exc}); free some space (or "
                      "pass --cache elsewhere) and rerun: answers already paid for are kept"
                      ) from None


def _nearly_full(folder: Path, margin: int = 1 << 20) -> bool:
    try:
        st = os.statvfs(folder)
    except OSError:
        return False
    return st.f_bavail * st.f_frsize < margin
