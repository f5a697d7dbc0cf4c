"""Resident memory for the benchmarks: the current RSS, and its peak sampled over a block."""

from __future__ import annotations

import gc
import os
import threading
import time


def rss_mib() -> float:
    """This process's resident set size now, in MiB (Linux, /proc)."""
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


class PeakRss:
    """``with PeakRss() as mem: ...`` samples the RSS every ``interval`` seconds in a thread;
    then ``mem.peak`` is the highest seen and ``mem.above`` the peak above the start.

    A short interval catches brief peaks; a longer one (the model's threads on a small
    machine) disturbs what is measured less. Garbage is collected first so that the start
    is not inflated by what earlier work left.
    """

    def __init__(self, interval: float = 0.002):
        self.interval = interval

    def __enter__(self):
        gc.collect()
        self.base = self.peak = rss_mib()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _run(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, rss_mib())
            time.sleep(self.interval)

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, rss_mib())
        self.above = self.peak - self.base
