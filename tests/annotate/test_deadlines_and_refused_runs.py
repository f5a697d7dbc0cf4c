"""What a careless or hostile user tried (issue 12), at the HTTP layer and through the CLI.

A server that drips its answer must not hold a request past --timeout; a server that echoes
the key must not get it stored; a refused run leaves nothing behind; an output that is an
input is refused before anything is opened for writing.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from tests.support.annotate_data import TINY, good_propose_table, good_verify, tiny_conversation
from tests.support.annotate_fakes import FakeOpenAI, script_responder
from typer.testing import CliRunner

from mtcabench.annotate import annotate_propose, annotate_run, annotate_verify
from mtcabench.annotate.phases import proposals_from_answer
from mtcabench.cli import app
from mtcabench.errors import ExitCode, ServiceError
from mtcabench.io import iter_json_lines, write_records
from mtcabench.model import Annotator

runner = CliRunner()


def responder():
    return script_responder(good_propose_table(), default_verify=good_verify)


def files_under(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() or p.is_symlink()}


# ---------------------------------------------------------------- a whole-request deadline

@pytest.mark.parametrize("fault", ["drip", "drip-all"])
def test_timeout_bounds_a_request_whose_answer_drips_in(tiny_path, tmp_path, fault):
    # A good answer, one byte every 20 ms: about 10 s for the whole of it, past a 1 s timeout
    # on every byte (the body alone, or the status line and headers too).
    with FakeOpenAI(responder(), drip_s=0.02) as fake:
        fake.faults.extend([fault, fault])
        started = time.monotonic()
        summary = annotate_propose(tiny_path, tmp_path / "p.jsonl", base_url=fake.base_url,
                                   model="fake", concurrency=1, timeout_s=1.0, max_attempts=2,
                                   backoff_s=0.01, limit=1, progress=False)
        took = time.monotonic() - started
    d = summary.as_dict()
    # Both tries ended at the deadline: a timeout, retried once, then left for a rerun...
    assert d["retries_by_reason"] == {"timeout": 1}
    assert d["failures_by_reason"] == {"timeout": 1} and d["not_answered"] == {"failed": 1}
    # ...and never accepted: nothing was answered, nothing cached, nothing written.
    assert d["requests_sent"] == 0 and d["proposals"]["ok"] == 0
    assert not (tmp_path / "annotate-cache.sqlite").exists()
    assert took < 2 * 1.0 + 2.0, f"two 1 s requests took {took:.1f} s"


def test_a_prompt_answer_within_the_deadline_is_accepted(tiny_path, tmp_path):
    with FakeOpenAI(responder(), drip_s=0.0005) as fake:  # slow but well within 5 s
        fake.faults.append("drip")
        summary = annotate_propose(tiny_path, tmp_path / "p.jsonl", base_url=fake.base_url,
                                   model="fake", timeout_s=5.0, limit=1, progress=False)
    assert summary.complete and summary.proposals.ok == 2 and not summary.accounting.retries


# ---------------------------------------------------------------- a server echoing the key

def test_a_server_echoing_the_key_gets_it_stored_and_shown_nowhere(tiny_path, tmp_path,
                                                                 monkeypatch):
    key = "sk-echo-0123456789abcdef0123456789"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    results = []
    with FakeOpenAI(responder(), api_key=key, echo_auth=True) as fake:
        common = ["--base-url", fake.base_url, "--model", "fake", "--no-progress"]
        results.append(runner.invoke(app, ["annotate", "run", str(tiny_path), "-o",
                                           str(tmp_path / "online"), "--annotators", "llm",
                                           *common]))
        results.append(runner.invoke(app, ["annotate", "run", str(tiny_path), "-o",
                                           str(tmp_path / "batch"), "--annotators", "llm",
                                           "--batch", "--batch-poll", "0.01", *common]))
        monkeypatch.setenv("OPENAI_API_KEY", key + "-wrong")  # the 401 message echoes it
        results.append(runner.invoke(app, ["annotate", "propose", str(tiny_path), "-o",
                                           str(tmp_path / "p.jsonl"), *common]))
        sent = [r for r in fake.requests if key in (r.headers.get("Authorization") or "")]
    assert results[0].exit_code == 0 and results[1].exit_code == 0, results[0].output
    assert results[2].exit_code == ExitCode.SERVICE and "HTTP 401" in results[2].output
    assert sent, "the key was not even sent"
    # The server did echo it: the answers are rejected as invalid JSON and kept as raw_output.
    raw = [o["raw_output"] for _, o in iter_json_lines(tmp_path / "online" / "proposals.jsonl")]
    assert raw and all("(you sent Bearer [redacted])" in r for r in raw)
    assert "[redacted]" in results[2].output
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert len(files) >= 6
    for path in files:
        assert key.encode() not in path.read_bytes(), f"the API key leaked into {path}"
    for res in results:
        assert key not in res.output


# ---------------------------------------------------------------- a refused run leaves nothing

def _proposals_file(tmp_path: Path) -> Path:
    conv = tiny_conversation(*TINY[0])
    table = good_propose_table()
    raw = json.dumps({"spans": table[(TINY[0][1], 4)] + table[(TINY[0][1], 8)]})
    proposals = proposals_from_answer(conv, "tiny/a#propose:4-8", (4, 8), raw, "stop",
                                      Annotator(name="llm", model="hand-written"))
    path = tmp_path / "proposals-in.jsonl"
    write_records(path, proposals)
    return path


@pytest.mark.parametrize("refusal", ["401", "unreachable"])
@pytest.mark.parametrize("command", ["run", "run-batch", "propose", "verify"])
def test_a_refused_run_leaves_no_output_file(tiny_path, tmp_path, monkeypatch, command,
                                             refusal):
    from mtcabench.services.llm_server import free_port

    proposals = _proposals_file(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong")
    with FakeOpenAI(responder(), api_key="sk-right") as fake:
        url = fake.base_url if refusal == "401" else f"http://127.0.0.1:{free_port()}/v1"
        before = files_under(tmp_path)
        opts = dict(base_url=url, model="fake", max_attempts=2, backoff_s=0.01, progress=False)
        with pytest.raises(ServiceError, match="HTTP 401" if refusal == "401" else
                           "cannot reach"):
            if command.startswith("run"):
                annotate_run(tiny_path, tmp_path / "out", batch=command == "run-batch", **opts)
            elif command == "propose":
                annotate_propose(tiny_path, tmp_path / "p.jsonl", **opts)
            else:
                annotate_verify(tiny_path, proposals, tmp_path / "c.jsonl", **opts)
    assert files_under(tmp_path) == before
    assert not (tmp_path / "out").exists()


# ---------------------------------------------------------------- output is the input

def _spellings(path: Path) -> dict[str, Path]:
    """The same file under other names: another spelling, a symlink, a hard link."""
    (path.parent / "sub").mkdir(exist_ok=True)
    symlink, hardlink = path.parent / "link.jsonl", path.parent / "hard.jsonl"
    symlink.symlink_to(path)
    os.link(path, hardlink)
    return {"same": path, "spelling": path.parent / "sub" / ".." / "." / path.name,
            "symlink": symlink, "hardlink": hardlink}


@pytest.mark.parametrize("name", ["same", "spelling", "symlink", "hardlink"])
@pytest.mark.parametrize("command", ["lineage", "propose", "verify-conversations",
                                     "verify-proposals", "run-cache"])
def test_an_output_that_is_an_input_is_refused_before_anything_is_written(
        fake_openai, tiny_path, tmp_path, command, name):
    proposals = _proposals_file(tmp_path)
    out = _spellings(proposals if command == "verify-proposals" else tiny_path)[name]
    common = ["--base-url", fake_openai.base_url, "--model", "fake", "--no-progress"]
    args = {
        "lineage": ["annotate", "lineage", "--in", tiny_path, "--out", out],
        "propose": ["annotate", "propose", tiny_path, "-o", out, *common],
        "verify-conversations": ["annotate", "verify", tiny_path, proposals, "-o", out, *common],
        "verify-proposals": ["annotate", "verify", tiny_path, proposals, "-o", out, *common],
        "run-cache": ["annotate", "run", tiny_path, "-o", tmp_path / "o", "--cache", out,
                      *common],
    }[command]
    _assert_refused(args, tmp_path, fake_openai)


@pytest.mark.parametrize("name", ["same", "spelling", "symlink", "hardlink"])
def test_a_run_whose_folder_holds_its_input_under_an_output_name_is_refused(
        fake_openai, tiny_path, tmp_path, name):
    folder = tmp_path / "d"
    (folder / "sub").mkdir(parents=True)
    target = folder / "candidates.jsonl"  # what `run` writes into its folder
    if name == "symlink":
        target.symlink_to(tiny_path)
    elif name == "hardlink":
        os.link(tiny_path, target)
    else:
        target.write_bytes(tiny_path.read_bytes())
    given = folder / "sub" / ".." / target.name if name == "spelling" else target
    _assert_refused(["annotate", "run", given, "-o", folder, "--base-url",
                     fake_openai.base_url, "--model", "fake", "--no-progress"],
                    tmp_path, fake_openai)


def _assert_refused(args, folder: Path, fake) -> None:
    before = files_under(folder)
    res = runner.invoke(app, [str(a) for a in args])
    assert res.exit_code == ExitCode.BAD_INPUT, res.output
    assert "this output is the input" in res.output and "Traceback" not in res.output
    assert files_under(folder) == before  # the input untouched, nothing new
    assert not fake.requests
