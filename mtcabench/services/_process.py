"""What both embedded services need of their child process: a port, and how it ended."""

from __future__ import annotations

import signal
import socket


def free_port() -> int:
    """A port that was free a moment ago on 127.0.0.1 (bind port 0, read it back)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def describe_exit(returncode: int) -> str:
    """``exited with signal SIGSEGV`` or ``exited with code 3`` (from Popen's returncode)."""
    if returncode < 0:
        try:
            return f"exited with signal {signal.Signals(-returncode).name}"
        except ValueError:
            return f"exited with signal {-returncode}"
    return f"exited with code {returncode}"
