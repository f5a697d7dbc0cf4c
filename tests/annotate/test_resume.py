"""A run killed midway and rerun: it finishes, writes no duplicate, repeats no finished request.

The run talks to the real llama.cpp server through a proxy that logs every request at the
HTTP layer; the kill is a SIGKILL of the ``mtcabench annotate run`` process.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest
from tests.support.annotate_fakes import CountingProxy

from mtcabench.annotate.llm import request_key
from mtcabench.annotate.phases import load_template
from mtcabench.io import iter_json_lines

pytestmark = [pytest.mark.llm_server, pytest.mark.slow]


def cache_keys(path):
    with sqlite3.connect(path) as db:
        return {k for (k,) in db.execute("SELECT key FROM answers")}


def test_killed_run_resumes_without_duplicates_or_repeated_requests(llm_server, tiny_path,
                                                                     tmp_path):
    proxy = CountingProxy(llm_server.base_url, tmp_path / "proxy.log").start()
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "mtcabench", "annotate", "run", str(tiny_path), "-o", str(out),
           "--base-url", proxy.base_url, "--model", llm_server.model,
           "--response-format", "json_object", "--concurrency", "1", "--no-progress",
           "--targets-per-request", "2", "--max-turn-chars", "400", "--max-prompt-chars", "3000",
           "--propose-max-tokens", "160", "--verify-max-tokens", "128"]
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    try:
        run1 = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        # Kill once two answers are in and a third request is on its way.
        deadline = time.monotonic() + 400
        while time.monotonic() < deadline and run1.poll() is None:
            events = proxy.events()
            answered = sum(e["event"] == "answered" for e in events)
            if answered >= 2 and sum(e["event"] == "sent" for e in events) > answered:
                break
            time.sleep(0.05)
        assert run1.poll() is None, "the first run ended before it could be killed"
        run1.send_signal(signal.SIGKILL)
        run1.wait(timeout=30)
        time.sleep(0.5)  # let the proxy log the answer the killed client never read
        n_events = len(proxy.events())
        finished = cache_keys(out / "annotate-cache.sqlite")
        assert len(finished) >= 2
        assert not (out / "summary.json").exists()  # it really died midway

        run2 = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
        assert run2.returncode == 0, run2.stderr
    finally:
        proxy.stop()

    # Each request of the rerun, named by the cache key the client computes for its body.
    templates = {p: load_template(p) for p in ("propose", "verify")}

    def key(body):
        phase = ("verify" if "TARGET SPAN in turn" in body["messages"][1]["content"]
                 else "propose")
        t = templates[phase]
        return request_key(endpoint=proxy.base_url, model=llm_server.model,
                           prompt_version=t.version, prompt_hash=t.sha256, body=body)

    later = proxy.events()[n_events:]
    sent_again = [key(e["body"]) for e in later
                  if e["event"] == "sent" and e["path"].endswith("/chat/completions")]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["requests_sent"] == len(sent_again) >= 1
    # No request whose answer the first run had kept went out again.
    assert not set(sent_again) & finished
    final = cache_keys(out / "annotate-cache.sqlite")
    assert finished < final and final - finished == set(sent_again)
    assert summary["cache_hits"] >= len(finished)
    assert summary["conversations_complete"] == 3 and not summary["not_answered"]
    for name in ("proposals.jsonl", "candidates.jsonl"):
        ids = [obj["id"] for _, obj in iter_json_lines(out / name)]
        assert ids and len(ids) == len(set(ids)), f"duplicate records in {name}"
