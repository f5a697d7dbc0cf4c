"""release under issue 22 (round 2): a Hub echoing the token in ``X-Error-Message`` (at the
HTTP boundary, as the other publish tests), two builds of one version at once, SIGTERM while
a build writes, and a build on a full disk (for real: a small tmpfs)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mtcabench.cli import app
from mtcabench.errors import ExitCode
from mtcabench.release import build_release

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()
TOKEN = "hf_hardening2_secret_token_0123456789abcdef"


def error_line(text: str) -> str:
    assert "Traceback" not in text, text
    errors = [line for line in text.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and text.strip().endswith(errors[0]), text
    return errors[0]


def build_args(inputs: dict[str, Path], version: str = "0.1.0") -> list[str]:
    return ["release", "build", "-v", version, "-r", str(inputs["reviewed"]), "-c",
            str(inputs["conversations"]), "-o", str(inputs["out"])]


# ---------------------------------------------------------------- the Hub echoing the token


def test_a_hub_echoing_the_token_in_x_error_message_shows_none_of_it(
        sample_inputs, fake_hub_module, monkeypatch):
    built = build_release("0.1.0", sample_inputs["reviewed"], sample_inputs["conversations"],
                          out=sample_inputs["out"])

    class EchoingHub(fake_hub_module.FakeHub):
        def route(self, req):
            auth = req.headers.get("authorization", "")
            return 403, {"X-Error-Message": f"Forbidden: your header was {auth!s}"}, {
                "error": f"Forbidden: your header was {auth}"}

    monkeypatch.setenv("HF_TOKEN", TOKEN)
    with EchoingHub() as hub:
        res = runner.invoke(app, ["release", "publish", str(built.folder), "--repo-id",
                                  "my-org/mtcabench", "--endpoint", hub.url])
        sent = {r.headers.get("authorization") for r in hub.requests}
    assert f"Bearer {TOKEN}" in sent  # the token was really sent, and echoed
    assert res.exit_code == ExitCode.SERVICE, res.output
    line = error_line(res.output)
    assert "403" in line and "[redacted]" in line, line
    assert not [TOKEN[i:i + 8] for i in range(len(TOKEN) - 7) if TOKEN[i:i + 8] in res.output]


# ---------------------------------------------------------------- builds held mid-write


# A build that stops where it starts writing its folder, until told to go on (a line on
# stdin): a second build, or a signal, then meets it mid-write, every time.
_HELD = textwrap.dedent("""
    import sys
    import mtcabench.release._build as build
    original = build._write_folder
    def held(*args, **kwargs):
        print("writing", flush=True)
        sys.stdin.readline()
        return original(*args, **kwargs)
    build._write_folder = held
    from mtcabench.cli import main
    sys.argv = ["mtcabench", *sys.argv[1:]]
    main()
""")


def _default_signals() -> None:
    # A run started in the background of a non-interactive shell inherits SIGINT ignored, and
    # so would the build (Python keeps an ignored SIGINT ignored): the test would see a build
    # that finishes instead of one a user stops.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _held_build(args: list[str]) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", _HELD, *args], env=env, text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, preexec_fn=_default_signals)
    assert proc.stdout.readline().strip() == "writing", proc.stderr.read()
    return proc


@pytest.mark.slow
def test_a_second_build_of_a_version_being_built_is_refused(sample_inputs):
    first = _held_build(build_args(sample_inputs))
    try:
        second = runner.invoke(app, build_args(sample_inputs))
        forced = runner.invoke(app, [*build_args(sample_inputs), "--force"])
        first.stdin.write("go\n")
        first.stdin.flush()
        out, err = first.communicate(timeout=120)
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    assert first.returncode == 0, err
    for res in (second, forced):
        assert res.exit_code == ExitCode.BUSY, res.output
        line = error_line(res.output)
        assert f"pid {first.pid}" in line and "0.1.0" in line, line
    folder = sample_inputs["out"]
    assert sorted(p.name for p in folder.iterdir()) == ["0.1.0"]  # no lock, no temp left
    # Built once it is free: the version exists now, so it is refused as before.
    again = runner.invoke(app, build_args(sample_inputs))
    assert again.exit_code == ExitCode.INVALID and "version-exists" in again.output


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_while_a_build_writes_leaves_nothing(sample_inputs, sig):
    build = _held_build(build_args(sample_inputs))
    try:
        assert any(p.name.startswith(".0.1.0.building-") for p in sample_inputs["out"].iterdir())
        build.send_signal(sig)
        build.communicate(timeout=60)
    finally:
        if build.poll() is None:
            build.kill()
            build.wait()
    assert build.returncode in (128 + sig, 130), build.returncode
    assert not sample_inputs["out"].exists() or list(sample_inputs["out"].iterdir()) == []


# ---------------------------------------------------------------- a full disk


def test_a_build_on_a_full_disk_is_one_line_and_leaves_nothing(sample_inputs, small_disk):
    inputs = dict(sample_inputs, out=small_disk.path / "release")
    proc, left = small_disk.run(build_args(inputs), size_kb=16)
    assert proc.returncode == ExitCode.NO_SPACE, proc.stderr
    assert "no space left on device" in error_line(proc.stderr)
    assert left == [], left
