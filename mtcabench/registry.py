"""One registry shape for every extension point (base scorers, methods, metrics, log formats,
floors, providers, phases).

A :class:`Registry` is a named table filled by explicit registration: a module defines its
class and registers it with one line, and the package's built-in entries are listed in one
table per kind (``lazy``: name -> the module that registers it, imported on first lookup, so
listing names never imports torch). One rule for duplicates everywhere: the same object
registered again under its name is a no-op (a module imported twice is harmless); a
*different* object under a taken name is a programming error, raised at once. A built-in's
name counts as taken before its module is imported.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from typing import Generic, TypeVar

from mtcabench.errors import InputError

T = TypeVar("T")


class Registry(Generic[T]):
    """Entries of one kind by name, in registration order."""

    def __init__(self, kind: str, lazy: Mapping[str, str] | None = None):
        #: How errors name an entry ("scorer", "log format", ...).
        self.kind = kind
        #: Built-in entries not yet imported: name -> the module that registers it.
        self.lazy: dict[str, str] = dict(lazy or {})
        self._entries: dict[str, T] = {}

    def register(self, entry: T, name: str | None = None) -> T:
        """Add ``entry`` under ``name`` (default: its ``name`` attribute); returns ``entry``,
        so it serves as a class decorator."""
        key = name if name is not None else getattr(entry, "name", None)
        if not key or not isinstance(key, str):
            raise ValueError(f"a {self.kind} needs a name: {entry!r}")
        if key not in self._entries and key in self.lazy:
            # A built-in's name is taken before its module is imported: import it now (inside
            # that module's own registration this returns at once), so that the duplicate rule
            # below applies, instead of the later import failing or the entry shadowing it.
            try:
                importlib.import_module(self.lazy[key])
            except ImportError:
                raise ValueError(f"{self.kind} {key!r} is a built-in's name (its module "
                                 f"{self.lazy[key]} is not importable here); choose another "
                                 "name") from None
        have = self._entries.get(key)
        if have is not None and have is not entry:
            raise ValueError(f"{self.kind} {key!r} registered twice ({have!r} and {entry!r})")
        self._entries[key] = entry
        return entry

    def unregister(self, name: str) -> None:
        """Remove ``name`` (tests that register a toy entry put things back)."""
        self._entries.pop(name, None)

    def names(self) -> list[str]:
        """Every name, registered or built in, without importing any module."""
        return [*self._entries, *(n for n in self.lazy if n not in self._entries)]

    def get(self, name: str) -> T:
        """The entry called ``name`` (its module imported on first use); an unknown name is an
        :class:`InputError` listing the known ones."""
        if name not in self._entries and name in self.lazy:
            importlib.import_module(self.lazy[name])
        if name not in self._entries:
            raise InputError(f"unknown {self.kind} {name!r}; choose one of "
                             f"{', '.join(sorted(self.names()))}")
        return self._entries[name]

    def load_all(self) -> dict[str, T]:
        """Every entry, built-in modules imported: for tables and --help listings."""
        for name in list(self.lazy):
            if name not in self._entries:
                importlib.import_module(self.lazy[name])
        return dict(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries or name in self.lazy

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.names())
