"""Against the real llama.cpp server with SmolLM2: wrong answers caught, valid ones through."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import httpx
import pytest
from tests.support.annotate_data import TINY, good_propose_table, tiny_conversation

from mtcabench.annotate import annotate_verify
from mtcabench.annotate.llm.providers import EmbeddedProvider, EndpointRequest
from mtcabench.annotate.phases import proposals_from_answer
from mtcabench.errors import ServiceError
from mtcabench.graph import check_graph
from mtcabench.io import iter_json_lines, load_conversations, read_records, write_records
from mtcabench.model import Annotator, Candidate, Proposal
from mtcabench.services.llm_server import LocalLLMServer

pytestmark = [pytest.mark.llm_server, pytest.mark.slow]


def test_server_starts_answers_and_stops(llm_server):
    models = httpx.get(f"{llm_server.base_url}/models", timeout=10).json()
    assert [m["id"] for m in models["data"]] == [llm_server.model]
    with LocalLLMServer() as other:  # a second one on its own free port, stopped on exit
        assert other.port != llm_server.port
        proc = other.proc
        assert httpx.get(f"{other.base_url}/models", timeout=10).status_code == 200
    assert proc.poll() is not None


def test_the_embedded_provider_serves_the_packaged_qwen_0_5b(monkeypatch):
    """`annotate run --model qwen2.5-coder-0.5b` without --base-url: the embedded server starts
    with the packaged model (installed by scripts/setup.sh) and answers under a JSON schema;
    the endpoint, and so the records and cache keys, name that model."""
    monkeypatch.delenv("MTCABENCH_LLM_MODEL", raising=False)
    served = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
    with EmbeddedProvider().open(EndpointRequest(model="qwen2.5-coder-0.5b")) as endpoint:
        assert (endpoint.model, endpoint.identity) == (served, f"embedded-llama.cpp:{served}")
        models = httpx.get(f"{endpoint.base_url}/models", timeout=10).json()
        assert [m["id"] for m in models["data"]] == [served]
        schema = {"type": "object", "properties": {"answer": {"type": "integer"}},
                  "required": ["answer"]}
        response = httpx.post(f"{endpoint.base_url}/chat/completions", timeout=300, json={
            "model": endpoint.model, "max_tokens": 24, "temperature": 0,
            "messages": [{"role": "user", "content": "Answer in JSON: what is 2 + 2?"}],
            "response_format": {"type": "json_object", "schema": schema}})
        assert response.status_code == 200, response.text
        assert json.loads(response.json()["choices"][0]["message"]["content"]) == {"answer": 4}


def test_server_that_cannot_start_fails_with_its_log(tmp_path):
    bad = tmp_path / "broken.gguf"
    bad.write_bytes(b"GGUF but not really" * 10)
    with pytest.raises(ServiceError, match="exited with code") as info:
        LocalLLMServer(bad, start_timeout_s=60).start()
    assert "broken.gguf" in str(info.value)


def _check_records(path, convs):
    """Every record is either ok and valid, or rejected with reasons and the raw answer."""
    n_ok = n_rejected = 0
    for _, obj in iter_json_lines(path):
        if obj["status"] == "ok":
            n_ok += 1
            rec = (Proposal if obj["kind"] == "proposal" else Candidate).model_validate(obj)
            assert check_graph(rec.graph, convs[rec.conversation_id], rec.span) == []
        else:
            n_rejected += 1
            assert obj["rejections"] and obj["rejections"][0]["reason"]
            assert obj["raw_output"]
    return n_ok, n_rejected


def test_cli_run_on_the_embedded_server_then_rerun_from_cache(tmp_path, tiny_path):
    """The demo's path: no key, no URL -> the embedded server; a rerun sends nothing."""
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "mtcabench", "annotate", "run", str(tiny_path), "-o", str(out),
           "--limit", "1", "--no-progress"]
    first = subprocess.run(cmd, env={**env, "COLUMNS": "200"}, capture_output=True, text=True,
                           timeout=600)
    assert first.returncode == 0, first.stderr
    assert "mtcabench annotate run" in first.stderr and "spans proposed (llm)" in first.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["endpoint"] == "embedded-llama.cpp:SmolLM2-135M-Instruct.Q4_1.gguf"
    assert summary["requests_sent"] >= 1 and summary["conversations_complete"] == 1
    convs = load_conversations(tiny_path)
    p_ok, p_rej = _check_records(out / "proposals.jsonl", convs)
    c_ok, c_rej = _check_records(out / "candidates.jsonl", convs)
    assert p_ok + p_rej == summary["proposals"]["ok"] + summary["proposals"]["rejected"] >= 1
    assert c_ok >= 3  # at least the lineage annotator's spans of tiny/a
    for _, obj in iter_json_lines(out / "proposals.jsonl"):
        assert obj["annotator"]["prompt_version"] == "propose-v1"
        assert len(obj["annotator"]["prompt_hash"]) == 64

    again = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr
    rerun = json.loads((out / "summary.json").read_text())
    assert rerun["requests_sent"] == 0
    assert rerun["cache_hits"] == summary["requests_sent"]
    assert rerun["candidates"]["written"] == 0
    assert rerun["candidates"]["already_written"] == c_ok + c_rej


def test_verify_on_the_real_model_lets_valid_answers_through(llm_server, tmp_path, tiny_path):
    conv = tiny_conversation(*TINY[0])
    table = good_propose_table()
    raw = json.dumps({"spans": table[(TINY[0][1], 4)] + table[(TINY[0][1], 8)]})
    proposals = proposals_from_answer(conv, "tiny/a#propose:4-8", (4, 8), raw, "stop",
                                      Annotator(name="llm", model="hand-written"))
    assert [p.status for p in proposals] == ["ok", "ok"]
    write_records(tmp_path / "proposals.jsonl", proposals)
    summary = annotate_verify(tiny_path, tmp_path / "proposals.jsonl",
                              tmp_path / "candidates.jsonl", base_url=llm_server.base_url,
                              model=llm_server.model, response_format="json_object",
                              verify_max_tokens=256, progress=False)
    assert summary.accounting.requests == 2
    ok, rejected = _check_records(tmp_path / "candidates.jsonl", load_conversations(tiny_path))
    assert ok + rejected == 2
    assert ok >= 1, "SmolLM2 confirmed none of two correct graphs"
    for c in read_records(tmp_path / "candidates.jsonl", Candidate):
        assert c.annotator.model == llm_server.model
        assert c.proposal_annotator.model == "hand-written"


def test_server_dies_with_a_killed_parent():
    """A killed annotation run must not leave its embedded server running."""
    import signal
    import time
    from pathlib import Path

    code = ("from mtcabench.services.llm_server import LocalLLMServer\n"
            "s = LocalLLMServer().start()\nprint(s.proc.pid, flush=True)\n"
            "import time; time.sleep(120)\n")
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    pid = int(parent.stdout.readline())
    assert Path(f"/proc/{pid}").exists()
    parent.send_signal(signal.SIGKILL)
    parent.wait(timeout=30)
    deadline = time.monotonic() + 30
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        state = Path(f"/proc/{pid}/stat").read_text().split()[2]
        if state == "Z":  # exited, waiting to be reaped by init
            break
        time.sleep(0.2)
    assert not Path(f"/proc/{pid}").exists() or state == "Z"
