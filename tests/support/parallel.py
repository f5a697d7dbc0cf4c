"""The test suite on two workers (pytest-xdist), and what keeps that correct and cheap.

* :func:`default_workers`: a run of the whole suite (or of test folders) goes to
  ``min(2, cores)`` workers when pytest-xdist is installed and the command line chose nothing
  (``-n``, ``--dist``, ``-p no:xdist``); a single file or test stays in one process, where a
  worker's start (imports, session fixtures) would cost more than it saves.
* :func:`group_shared_work`: under ``--dist loadgroup``, tests that share one instance of a
  costly fixture go to the same worker, so that it is built once: a module-, class- or
  package-scoped fixture (its module's tests), a session fixture named in
  :data:`SHARED_SESSION_FIXTURES`, and tests that carry the same ``xdist_group`` mark
  (the docs blocks of one file, which run in order in one sandbox). Everything else is
  handed out test by test.
* :func:`make_scheduler` (``GroupScheduling``): hands those groups out. xdist's own
  loadgroup scheduler reads a group from the test's id, which xdist 3.8 writes into an
  attribute pytest 9 no longer reads (``Item._nodeid``), so every test there goes out alone:
  here each worker writes its groups to a file (:func:`write_groups`) that the controller
  reads before it schedules.
* :func:`one_thread_per_worker`: each worker's torch (and the commands it starts) on one
  thread: two workers of two threads each on two cores oversubscribe them.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

#: Session fixtures that take minutes to build: every test asking for one runs on the worker
#: that built it (the others would build it again).
SHARED_SESSION_FIXTURES = ("release_2", "taubench_release")
#: Module-scoped fixtures that are cheap and whose tests may still go to different workers.
SPLITTABLE = ("sandbox_root", "browser")


def default_workers(config: pytest.Config) -> None:
    """Turn ``-n 2`` on where the command line left the choice open, and ``--dist loadgroup``
    wherever workers run and no other distribution was asked for."""
    if not config.pluginmanager.hasplugin("xdist") or hasattr(config, "workerinput"):
        return
    opt = config.option
    if opt.numprocesses is None and _whole_runs(config):
        cores = (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                 else os.cpu_count() or 1)
        if cores >= 2:
            opt.numprocesses = min(2, cores)
    if opt.numprocesses and opt.dist == "no":
        opt.dist = "loadgroup"


def _whole_runs(config: pytest.Config) -> bool:
    """Whether the command runs the suite or test folders, with nothing that wants one process."""
    opt = config.option
    if (opt.dist != "no" or opt.tx or opt.usepdb or opt.collectonly
            or getattr(opt, "looponfail", False)):
        return False
    if config.args_source == pytest.Config.ArgsSource.TESTPATHS:
        return True
    return all(os.path.isdir(a.split("::")[0]) for a in config.args)


def one_thread_per_worker(config: pytest.Config) -> None:
    """On an xdist worker: torch, and the processes the tests start, on one thread."""
    if not hasattr(config, "workerinput"):
        return
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    if "torch" in sys.modules:  # imported before us: its pool is already sized
        sys.modules["torch"].set_num_threads(int(os.environ["OMP_NUM_THREADS"]))


def _shared_keys(item: pytest.Item) -> list[str]:
    """What ``item`` shares with other tests that a worker should build only once."""
    keys = [str(m.args[0] if m.args else m.kwargs.get("name", "default"))
            for m in item.iter_markers("xdist_group")]
    info = getattr(item, "_fixtureinfo", None)
    for name, defs in (info.name2fixturedefs.items() if info else ()):
        scope = defs[-1].scope
        if name in SHARED_SESSION_FIXTURES:
            keys.append(name)
        elif scope in ("module", "class", "package") and name not in SPLITTABLE:
            module = item.nodeid.split("::")[0]
            where = module.rsplit("/", 1)[0] if scope == "package" else module
            keys.append(f"{name}:{where}")
    return keys


def group_shared_work(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Give the tests that share work one ``xdist_group`` each (on a loadgroup worker only:
    told so by the controller, since a worker parses the command line without its defaults)."""
    if GROUPS_KEY not in getattr(config, "workerinput", {}):
        return
    parent: dict[str, str] = {}

    def find(k: str) -> str:
        while parent.setdefault(k, k) != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k

    keys = {item.nodeid: _shared_keys(item) for item in items}
    for ks in keys.values():
        for k in ks[1:]:
            a, b = find(ks[0]), find(k)
            if a != b:
                parent[max(a, b)] = min(a, b)
    # One mark per test: xdist joins the names of several into a group of their own.
    for item in items:
        for node in item.listchain():
            node.own_markers[:] = [m for m in node.own_markers if m.name != "xdist_group"]
    for item in items:
        if keys[item.nodeid]:
            item.add_marker(pytest.mark.xdist_group(find(keys[item.nodeid][0])))


#: The workerinput key naming the folder where workers write their groups (loadgroup only).
GROUPS_KEY = "mtcabench_groups"
_GROUPS_DIR = pytest.StashKey[Path]()


def hand_groups_folder(node) -> None:
    """Controller, as a worker starts (``pytest_configure_node``): where it writes its groups."""
    config = node.config
    if config.getvalue("dist") != "loadgroup":
        return
    if _GROUPS_DIR not in config.stash:
        config.stash[_GROUPS_DIR] = Path(tempfile.mkdtemp(prefix="mtcabench-xdist-groups-"))
    node.workerinput[GROUPS_KEY] = str(config.stash[_GROUPS_DIR])


def drop_groups_folder(config: pytest.Config) -> None:
    if _GROUPS_DIR in config.stash:
        shutil.rmtree(config.stash[_GROUPS_DIR], ignore_errors=True)


def write_groups(session: pytest.Session) -> None:
    """Worker, once collected: each grouped test's final id and its group, for the controller."""
    folder = getattr(session.config, "workerinput", {}).get(GROUPS_KEY)
    if not folder:
        return
    groups = {item.nodeid: str(m.args[0]) for item in session.items
              if (m := item.get_closest_marker("xdist_group")) and m.args}
    path = Path(folder) / f"{session.config.workerinput['workerid']}.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(groups), encoding="utf-8")
    os.replace(tmp, path)


def make_scheduler(config: pytest.Config, log):
    """``pytest_xdist_make_scheduler``: :class:`GroupScheduling` for ``--dist loadgroup``."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadGroupScheduling

    class GroupScheduling(LoadGroupScheduling):
        """xdist's loadgroup, with the groups the workers wrote (see the module's docstring)."""

        groups: dict[str, str] | None = None

        def schedule(self) -> None:
            if self.groups is None:
                self.groups = {}
                for path in sorted(config.stash[_GROUPS_DIR].glob("*.json")):
                    self.groups.update(json.loads(path.read_text(encoding="utf-8")))
            super().schedule()

        def _split_scope(self, nodeid: str) -> str:
            if self.groups and nodeid in self.groups:
                return "group:" + self.groups[nodeid]
            return super()._split_scope(nodeid)

    return GroupScheduling(config, log)
