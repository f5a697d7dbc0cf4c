"""Fixtures shared by every test folder: project paths, the real upstream TauBench file, the
real model (loaded once per session), the tiny random-weight models (built once per session)
and the sample's benchmark."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import (
    CHROMIUM,
    CHROMIUM_ARGS,
    ROOT,
    SAMPLE,
    release_2_tau2_files,
    tau2_folder,
    taubench_airline_path,
)
from tests.support import parallel
from tests.support.sample_benchmark import build_sample_benchmark
from tests.support.tiny_models import TinyModels

# tests/peers/ runs the attribution methods' own packages, which live in the peers' virtual
# environment (scripts/setup_peers.sh; .ci/run runs the folder there). Elsewhere it is not
# collected at all: the default run neither fails nor skips for their absence.
collect_ignore = [] if all(importlib.util.find_spec(m) for m in ("at2", "context_cite")) else [
    "peers"]


#: What the fast lane (``pytest --fast``) leaves out: tests that load the real model, start a
#: service or a browser, are marked slow, or read the real upstream runs (TauBench, tau2-bench).
SLOW_MARKERS = ("model", "browser", "llm_server", "label_studio", "phoenix", "slow",
                "real_runs")
#: Fixtures that mark the tests asking for them, directly or through another fixture: the real
#: model, reading (or building a release from) the real TauBench or tau2-bench runs, and running
#: a command in a process of its own on a small full disk (seconds each). The tiny models mark
#: nothing: a test that asks only for them runs in the fast lane.
MARKED_BY_FIXTURE = {"loaded": "model", "taubench_airline": "real_runs",
                     "taubench_release": "real_runs", "tau2_results": "real_runs",
                     "release_2": "real_runs",
                     "small_disk": "slow"}


def pytest_addoption(parser):
    parser.addoption("--fast", action="store_true", help="the fast lane: leave out tests marked "
                     + ", ".join(SLOW_MARKERS) + " (CI runs everything)")


@pytest.hookimpl(tryfirst=True)  # before xdist's own, which reads -n and --dist
def pytest_cmdline_main(config):
    parallel.default_workers(config)


def pytest_configure(config):
    parallel.one_thread_per_worker(config)


def pytest_unconfigure(config):
    parallel.drop_groups_folder(config)


# xdist's hooks (optional: they exist only where pytest-xdist is installed and on)
@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    parallel.hand_groups_folder(node)


@pytest.hookimpl(optionalhook=True, tryfirst=True)  # before xdist's own (the first answer wins)
def pytest_xdist_make_scheduler(config, log):
    return parallel.make_scheduler(config, log)


@pytest.hookimpl(tryfirst=True)  # written before the worker tells the controller it collected
def pytest_collection_finish(session):
    parallel.write_groups(session)


@pytest.hookimpl(tryfirst=True)  # before xdist's worker turns the groups into node ids
def pytest_collection_modifyitems(config, items):
    for item in items:
        for marker in {MARKED_BY_FIXTURE[f] for f in item.fixturenames if f in MARKED_BY_FIXTURE}:
            item.add_marker(marker)
    slow = [i for i in items if any(i.get_closest_marker(m) for m in SLOW_MARKERS)
            ] if config.getoption("--fast") else []
    if slow:
        config.hook.pytest_deselected(items=slow)
        left_out = set(map(id, slow))
        items[:] = [i for i in items if id(i) not in left_out]
    parallel.group_shared_work(config, items)


def _invoke(*args) -> None:
    from typer.testing import CliRunner

    from mtcabench.cli import app

    res = CliRunner().invoke(app, [str(a) for a in args])
    assert res.exit_code == 0, res.output


def _release(d: Path, convs: Path, *build_options: str, summary: Path | None = None) -> Path:
    """The pipeline of docs/release.md from ingested conversations: annotate lineage ->
    annotate counterfactual, appended -> review auto-accept -> release build 2.0.0 (with
    ``build_options``) into ``d``/release; the release folder."""
    cands, reviewed = d / "candidates.jsonl", d / "reviewed.jsonl"
    cf_convs, cf_cands = d / "cf-conversations.jsonl", d / "cf-candidates.jsonl"
    all_convs, all_cands = d / "all-conversations.jsonl", d / "all-candidates.jsonl"
    _invoke("annotate", "lineage", "--in", convs, "--out", cands,
            *(["--summary-json", summary] if summary else []))
    _invoke("annotate", "counterfactual", "--in", convs, "--out", cf_cands,
            "--conversations-out", cf_convs)
    all_convs.write_bytes(convs.read_bytes() + cf_convs.read_bytes())
    all_cands.write_bytes(cands.read_bytes() + cf_cands.read_bytes())
    _invoke("review", "auto-accept", "--candidates", all_cands, "--conversations", all_convs,
            "--out", reviewed)
    _invoke("release", "build", "--version", "2.0.0", "--reviewed", reviewed,
            "--conversations", all_convs, "--candidates", all_cands, "--out", d / "release",
            *build_options)
    return d / "release" / "2.0.0"


@pytest.fixture(scope="session")
def taubench_release(taubench_airline, tmp_path_factory) -> tuple[Path, Path]:
    """A release built from the 200 real TauBench airline runs with the pipeline of
    docs/release.md (ingest -> annotate lineage -> annotate counterfactual, appended -> review
    auto-accept -> release build): (its working folder, the release folder). Built once per
    session for every test that reads it."""
    d = tmp_path_factory.mktemp("real-release")
    convs = d / "conversations.jsonl"
    _invoke("ingest", "taubench", taubench_airline, "--out", convs)
    return d, _release(d, convs, summary=d / "s.json")


@pytest.fixture(scope="session")
def release_2(taubench_airline, tau2_results, tmp_path_factory) -> tuple[Path, Path]:
    """Release 2.0 from every source, as docs/release.md builds it: the 200 TauBench runs and
    the 663 tau2-bench runs, lineage and the counterfactual split, auto-accepted, built
    --split-by-task with the cap of 50 spans per conversation: (its working folder, the
    release folder). About 5 minutes on the shared 2-core machine: built once per session."""
    d = tmp_path_factory.mktemp("release-2")
    tb, t2, convs = d / "taubench.jsonl", d / "tau2.jsonl", d / "conversations.jsonl"
    _invoke("ingest", "taubench", taubench_airline, "--out", tb)
    _invoke("ingest", "tau2", *release_2_tau2_files(tau2_results), "--out", t2)
    convs.write_bytes(tb.read_bytes() + t2.read_bytes())
    return d, _release(d, convs, "--split-by-task", "--max-spans-per-conversation", "50")


@pytest.fixture(scope="session")
def sample_path() -> Path:
    return SAMPLE


@pytest.fixture(scope="session")
def taubench_airline() -> Path:
    """Path of the real TauBench airline file; fails (never skips) when it is not there."""
    path = taubench_airline_path()
    if path is None:
        pytest.fail(
            "the TauBench file gpt-4o-airline.json is needed: run `mtcabench raw fetch --only "
            "taubench/gpt-4o-airline.json` (or --from a folder holding it), or set "
            "MTCABENCH_TAUBENCH_AIRLINE"
        )
    return path


@pytest.fixture(scope="session")
def tau2_results() -> Path:
    """The folder of the 19 real tau2-bench results files; fails (never skips) without it."""
    folder = tau2_folder()
    if folder is None:
        pytest.fail("the 19 tau2-bench results files are needed: run `mtcabench raw fetch "
                    "--source tau2` (or --from a folder holding them), or set MTCABENCH_TAU2")
    return folder


@pytest.fixture(scope="module")
def browser():
    """A headless Chromium; a test that needs it fails loudly where it is missing."""
    from playwright.sync_api import sync_playwright

    if not CHROMIUM.is_file():
        pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium package (scripts/setup.sh)")
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        yield b
        b.close()


# ---------------------------------------------------------------- a small disk, for real


class SmallDisk:
    """Runs ``python -m mtcabench ...`` with a small tmpfs mounted at :attr:`path`, in a
    mount namespace of its own (``unshare -rm``: no root needed where user namespaces are
    allowed, and nothing mounted on the host). A full disk is then the kernel's ENOSPC, not
    an injected error. :meth:`run` returns the process and what the disk held after it."""

    def __init__(self, path: Path):
        self.path = path

    def run(self, args: list[str], *, size_kb: int, cwd: Path | None = None,
            env: dict[str, str] | None = None, read_only: bool = False,
            ) -> tuple[subprocess.CompletedProcess, list[str]]:
        listing = self.path.parent / f"{self.path.name}.listing"
        script = ('mount -t tmpfs -o size="$SMALL_DISK_KB"k$SMALL_DISK_RO tmpfs "$SMALL_DISK" '
                  '|| exit 99\n'
                  '"$@"; rc=$?\n'
                  'find "$SMALL_DISK" -mindepth 1 -printf "%P\\n" > "$SMALL_DISK_LISTING"\n'
                  'exit $rc')
        full_env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "300",
                    "SMALL_DISK": str(self.path), "SMALL_DISK_KB": str(size_kb),
                    "SMALL_DISK_RO": ",ro" if read_only else "",
                    "SMALL_DISK_LISTING": str(listing), **(env or {})}
        proc = subprocess.run(["unshare", "-rm", "sh", "-c", script, "sh", sys.executable,
                               "-m", "mtcabench", *args], cwd=cwd or self.path.parent,
                              env=full_env, capture_output=True, text=True, timeout=300)
        if proc.returncode == 99:
            pytest.fail(f"could not mount a small tmpfs in a user namespace: {proc.stderr}")
        return proc, sorted(listing.read_text().split("\n")[:-1])


@pytest.fixture
def small_disk(tmp_path) -> SmallDisk:
    """A folder that a command run through :class:`SmallDisk` sees as a small, full disk."""
    if shutil.which("unshare") is None:
        pytest.fail("`unshare` (util-linux) is needed to mount a small disk for the test")
    path = tmp_path / "disk"
    path.mkdir()
    return SmallDisk(path)


@pytest.fixture(scope="session")
def loaded():
    """The default model (SmolLM2-135M-Instruct), loaded once per session (load_model's memo
    hands the same object to a command run through CliRunner). Asking for it marks a test
    ``model``: use it where real weights matter, a tiny model elsewhere."""
    from mtcabench.evaluate import load_model

    return load_model()


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory) -> TinyModels:
    """The tiny random-weight models' folders (tests/support/tiny_models.py), by architecture:
    ``tiny_models["llama"]`` (the default model's architecture), ``["qwen3"]`` (q/k norms),
    ``["mistral"]`` (a sliding window); each built on first use, once per session (per
    worker), and taken by every path a real model folder is: ``load_model(str(folder))``,
    ``--model FOLDER``, the Tracer."""
    return TinyModels(tmp_path_factory.mktemp("tiny-models"))


@pytest.fixture(scope="session")
def tiny_model_dir(tiny_models) -> Path:
    """The folder of the tiny model of the default model's architecture (``--model`` takes it)."""
    return tiny_models["llama"]


@pytest.fixture(scope="session")
def tiny_loaded(tiny_model_dir):
    """The tiny model of the default model's architecture, loaded (``loaded``'s stand-in for
    tests of mechanics; the same object a command given ``--model tiny_model_dir`` loads)."""
    from mtcabench.evaluate import load_model

    return load_model(str(tiny_model_dir))


@pytest.fixture(scope="session")
def sample_benchmark(sample_path, tmp_path_factory) -> Path:
    """The sample's three conversations with five hand-written gold spans."""
    return build_sample_benchmark(sample_path, tmp_path_factory.mktemp("sample-bench"))
