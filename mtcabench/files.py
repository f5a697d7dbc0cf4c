"""Writing files safely: the one writer discipline and the one name policy.

Writers never leave a half-written file behind: :func:`atomic_write` writes a temporary file
in the target folder and renames it into place on success; the temporary file is removed on
an error, Ctrl-C, SIGTERM or SIGHUP, and a full disk is one line
(:class:`~mtcabench.errors.NoSpace`, exit 7). The files of one output set (``score``'s five,
``show``'s pages) are written inside :func:`all_or_nothing`: all of them appear, or none. A
run that owns an output for its whole length (``annotate propose``, ``release build``) holds
:func:`claim_output` on it: a second process is refused (exit 8) naming the first. Every text
written is redacted (:mod:`mtcabench.redact`).

Names: a file named after a user's name or id gets :func:`derived_name` (safe characters,
never hidden, shortened with a hash so that it fits the file system's 255 bytes with its
suffix); an output name the user gave that is itself too long is refused by
:func:`check_output_path`.

What already sits at a path is not trusted: an output path or a lock file that is a symbolic
link, a FIFO, a device or a socket is refused (:func:`check_output_path`,
:func:`claim_output`), never followed, written into or renamed over; an input that is not a
regular file is named for what it is (:func:`input_file`). :mod:`mtcabench.io` re-exports all of this.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import os
import re
import signal
import stat
import tempfile
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from mtcabench.errors import InputError, NoSpace, OutputBusy, from_os_error
from mtcabench.redact import scrubber

#: The longest file name (in bytes) that the file systems we write to accept.
NAME_MAX = 255
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def fit_name(name: str, max_bytes: int = NAME_MAX) -> str:
    """``name`` if its UTF-8 form fits ``max_bytes``; else cut, with ``~`` and a hash of the
    whole name, so that two long names that share a start still get two files."""
    if len(name.encode("utf-8")) <= max_bytes:
        return name
    tag = "~" + hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    cut = name.encode("utf-8")[: max_bytes - len(tag)].decode("utf-8", "ignore")
    return cut + tag


def derived_name(text: str, suffix: str = "", *, default: str = "file",
                 room: int = 0) -> str:
    """The one name policy for a file named after a user's name or id (a span id, a
    submission's file name): unsafe characters become ``_``, a leading ``.`` or ``-`` is
    dropped (no hidden page, nothing read as an option), and the stem is shortened with a
    hash so that stem, ``suffix`` and ``room`` more bytes fit :data:`NAME_MAX`."""
    stem = _UNSAFE.sub("_", text).strip("_").lstrip(".-") or default
    return fit_name(stem, NAME_MAX - len(suffix.encode("utf-8")) - room) + suffix


def node_kind(mode: int) -> str | None:
    """What a file that is not a regular file or a folder is, in words (None: one of those)."""
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return None


def check_output_path(path: str | Path) -> Path:
    """Refuse (exit 3) an output file path whose folder is missing, that is a folder, or whose
    name is longer than the file system allows.

    The file policy: an output is written as a new regular file renamed into place, so what
    already sits at the path must be a regular file. A symbolic link there is refused, not
    followed or replaced (it may point anywhere: ``/dev/stdout``, a file of another user), and
    so are a FIFO, a device (``/dev/null``) and a socket: renaming over them would replace the
    node, writing into them would stream the output somewhere the user did not name.
    """
    path = Path(path)
    size = len(os.fsencode(path.name))
    if size > NAME_MAX:
        raise InputError(f"{fit_name(path.name, 60)}: the file name is {size} bytes, longer "
                         f"than the {NAME_MAX} a file system allows; choose a shorter name")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.exists():
        raise InputError(f"{path}: folder {parent} does not exist; create it or choose another path")
    if not parent.is_dir():
        raise InputError(f"{path}: {parent} is not a folder")
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return path
    except OSError as exc:
        raise os_error(exc, path) from None
    if stat.S_ISDIR(mode):
        raise InputError(f"{path}: is a folder; the output is a file: give a file path "
                         "(e.g. inside that folder)")
    kind = node_kind(mode)
    if kind is not None:
        raise InputError(f"{path}: is {kind}; outputs are written as regular files only "
                         "(a link is not followed, a pipe or device not written into): give "
                         "the path of a file")
    return path


def input_file(path: str | Path, expected: str = "a file") -> Path:
    """``path`` if it is a regular file (a link to one counts), else one line saying what it is:
    missing, a folder, a FIFO, a device, a dangling link (exit 3)."""
    path = Path(path)
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        dangling = os.path.lexists(path)
        raise InputError(f"{path}: " + ("a symbolic link to nothing" if dangling
                                        else "no such file")) from None
    except OSError as exc:
        raise os_error(exc, path) from None
    if stat.S_ISREG(mode):
        return path
    if stat.S_ISDIR(mode):
        raise InputError(f"{path}: is a folder, expected {expected}")
    raise InputError(f"{path}: is {node_kind(mode) or 'not a regular file'}, expected {expected}; "
                     "save what it carries to a file and give that")


# SIGTERM (a service manager, `timeout`, `kill`) and SIGHUP (a closed terminal) end a process
# without unwinding it, so a write in progress would leave its temporary file. While a write
# is open, both raise SystemExit(128 + signal) instead, as SIGINT raises KeyboardInterrupt:
# the writer's cleanup runs, then the process ends with the usual exit code. Handlers that the
# program set itself are left alone; outside writes the default action applies.
_STOP_SIGNALS = tuple(s for s in (getattr(signal, "SIGTERM", None), getattr(signal, "SIGHUP", None))
                      if s is not None)
_guard_lock = threading.Lock()
_guard_depth = 0
_saved_handlers: dict[int, Any] = {}


def _stop(signum: int, frame: Any) -> None:
    raise SystemExit(128 + signum)


@contextlib.contextmanager
def _cleanup_on_stop_signals() -> Iterator[None]:
    global _guard_depth
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may set handlers (and only it receives signals)
        return
    with _guard_lock:
        if _guard_depth == 0:
            for sig in _STOP_SIGNALS:
                if signal.getsignal(sig) is signal.SIG_DFL:
                    _saved_handlers[sig] = signal.signal(sig, _stop)
        _guard_depth += 1
    try:
        yield
    finally:
        with _guard_lock:
            _guard_depth -= 1
            if _guard_depth == 0:
                for sig, old in _saved_handlers.items():
                    if signal.getsignal(sig) is _stop:
                        signal.signal(sig, old)
                _saved_handlers.clear()


#: The extra bytes of a temporary file's name over its target's (``.``, ``.XXXXXXXX.tmp``).
_TMP_EXTRA = 14
_group = threading.local()


def stop_signals_unwind():
    """A context in which SIGTERM and SIGHUP unwind (SystemExit) as Ctrl-C does, so that a
    command's own cleanup (a half-built folder) runs; see :func:`atomic_write`."""
    return _cleanup_on_stop_signals()


@contextlib.contextmanager
def all_or_nothing() -> Iterator[None]:
    """Files written with :func:`atomic_write` inside are renamed into place together at the
    end, or none of them is (an error, a full disk, Ctrl-C, SIGTERM: every temporary file
    is removed). The renames run with the stop signals held back, so that a signal arriving
    then takes effect once every file is in place. A nested call joins the outer one."""
    if getattr(_group, "pending", None) is not None:
        yield
        return
    pending: list[tuple[str, Path]] = []
    _group.pending = pending
    try:
        with _cleanup_on_stop_signals():
            try:
                yield
            except BaseException:
                for tmp, _ in pending:
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(tmp)
                raise
            finally:
                _group.pending = None
            _rename_all(pending)
    finally:
        _group.pending = None


def _rename_all(pending: list[tuple[str, Path]]) -> None:
    held = (signal.SIGINT, *_STOP_SIGNALS)
    main = threading.current_thread() is threading.main_thread()
    if main:
        signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        for k, (tmp, path) in enumerate(pending):
            try:
                os.replace(tmp, path)
            except BaseException:
                for rest, _ in pending[k:]:
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(rest)
                raise
    finally:
        if main:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, held)


@contextlib.contextmanager
def atomic_write(path: str | Path, mode: str = "w") -> Iterator[IO]:
    """Open a temporary file beside ``path``; rename it over ``path`` only on success.

    On any failure, Ctrl-C, SIGTERM or SIGHUP the temporary file is removed and ``path`` is
    left as it was; a full disk is :class:`~mtcabench.errors.NoSpace` naming ``path``. Inside
    :func:`all_or_nothing` the rename waits for the other files of the set.
    """
    path = check_output_path(path)
    # The temporary name must fit too: a long target gets a shortened one.
    name = fit_name(path.name, NAME_MAX - _TMP_EXTRA)
    group = getattr(_group, "pending", None)
    with _cleanup_on_stop_signals():
        try:
            fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=path.parent or ".")
        except OSError as exc:
            raise os_error(exc, path) from None
        handed = False
        try:
            with os.fdopen(fd, mode, **({} if "b" in mode else {"encoding": "utf-8"})) as fh:
                yield fh if "b" in mode else _Redacting(fh)
                fh.flush()
                os.fsync(fh.fileno())
            # mkstemp creates the file for its owner only; give it the usual permissions.
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)
            if group is not None:
                group.append((tmp, path))
                handed = True
            else:
                os.replace(tmp, path)
        except BaseException as exc:
            if not handed:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(tmp)
            if isinstance(exc, OSError):
                raise os_error(exc, path) from None
            raise


class _Redacting:
    """A text file whose every write is redacted (:mod:`mtcabench.redact`): no secret the
    process holds reaches a file an atomic writer writes (a summary, a report, a page)."""

    def __init__(self, fh: IO[str]):
        self._fh = fh
        self._scrub = scrubber()

    def write(self, text: str) -> int:
        return self._fh.write(self._scrub(text))

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._fh, name)


def os_error(exc: OSError, path: Path) -> Exception:
    """A full disk (or a too-long name, a read-only folder) while writing ``path`` as its
    one-line error; any other error as it is."""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
        return NoSpace(f"{path}: {os.strerror(exc.errno).lower()} while writing it; nothing "
                       "half-written was kept: free some space (or write elsewhere) and rerun")
    return from_os_error(exc) or exc


# ---------------------------------------------------------------- one writer per output


@contextlib.contextmanager
def claim_output(path: str | Path) -> Iterator[None]:
    """Hold ``path`` (a file or a folder an output goes to) for the length of a run.

    The claim is an exclusive ``flock`` on a lock file beside it (``.NAME.lock``, holding the
    owner's pid), released and removed at the end; the kernel drops it when the process dies,
    so a killed run never leaves a stale claim. A second process claiming the same output
    is refused at once (:class:`~mtcabench.errors.OutputBusy`, exit 8), naming the first.
    """
    path = Path(path)
    lock = path.parent / fit_name(f".{path.name}.lock")
    while True:
        # O_NOFOLLOW: a link planted at the lock's name is refused, never followed (it would
        # truncate the file it points to); O_NONBLOCK: a FIFO there does not hang the open.
        flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        try:
            fd = os.open(lock, flags, 0o644)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise InputError(f"{lock}: the lock file of {path} is a symbolic link; it is not "
                                 "followed: remove it and rerun") from None
            if exc.errno == errno.EISDIR:
                raise InputError(f"{lock}: the lock file of {path} is a folder; remove it and "
                                 "rerun") from None
            raise os_error(exc, lock) from None
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            kind = node_kind(os.fstat(fd).st_mode) or "not a regular file"
            os.close(fd)
            raise InputError(f"{lock}: the lock file of {path} is {kind}; remove it and rerun")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            owner = os.read(fd, 32).decode("ascii", "replace").strip() or "unknown"
            os.close(fd)
            raise OutputBusy(f"{path}: another mtcabench process (pid {owner}) is writing this "
                             "output now; wait for it to finish, or choose another output"
                             ) from None
        except OSError as exc:
            os.close(fd)
            raise os_error(exc, lock) from None
        # The previous holder may have removed the file between our open and our lock.
        try:
            same = os.lstat(lock).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)
    try:
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        yield
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(lock)
        os.close(fd)
