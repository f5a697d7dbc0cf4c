"""Faults a real API shows, injected at the HTTP layer: retries, failures, budget, concurrency."""

from __future__ import annotations

import json

import pytest
from tests.support.annotate_fakes import FakeOpenAI, script_responder
from typer.testing import CliRunner

from mtcabench.annotate import Budget, annotate_run
from mtcabench.cli import app
from mtcabench.errors import ExitCode, ServiceError, Stopped
from mtcabench.io import iter_json_lines
from mtcabench.model import parse_span_id

runner = CliRunner()


def run(fake, conversations, out, **kw):
    opts = dict(base_url=fake.base_url, model="fake", annotators="llm", concurrency=1,
                timeout_s=0.6, max_attempts=6, backoff_s=0.05, progress=False)
    opts.update(kw)
    return annotate_run(conversations, out, **opts)


def ids(path):
    return [obj["id"] for _, obj in iter_json_lines(path)] if path.exists() else []


def test_429_500_timeout_and_truncated_bodies_are_retried(fake_openai, tiny_path, tmp_path):
    fake_openai.timeout_sleep_s = 1.5
    fake_openai.faults.extend(["429", "500", "timeout", "truncated", "truncated-json"])
    summary = run(fake_openai, tiny_path, tmp_path / "out", limit=1)
    d = summary.as_dict()
    assert d["retries_by_reason"] == {"rate-limited": 1, "http-500": 1, "timeout": 1,
                                      "dropped": 1, "bad-response": 1}
    assert d["failures"] == 0 and summary.complete
    chats = fake_openai.chat_requests()
    # The first request was sent six times, identically, before it got its answer.
    assert len({r.body for r in chats[:6]}) == 1
    # Retry-After: 1 was honoured between the 429 and the next attempt.
    assert chats[1].at - chats[0].at >= 1.0
    # And the answer flowed through both phases: two ok proposals, two ok candidates.
    assert d["proposals"]["ok"] == 2 and d["candidates"]["ok"] == 2
    assert d["requests_sent"] == 3  # 1 propose + 2 verify answered


def test_schema_breaking_answer_is_rejected_kept_and_cached(tiny_path, tmp_path):
    def respond(body):
        return '{"spans": [{"turn": "four", "quote": 1}]}'

    with FakeOpenAI(respond) as fake:
        out = tmp_path / "out"
        summary = run(fake, tiny_path, out, limit=1)
        [rec] = [obj for _, obj in iter_json_lines(out / "proposals.jsonl")]
        assert rec["status"] == "rejected" and rec["rejections"][0]["reason"] == "schema"
        assert rec["raw_output"] == respond(None)
        assert summary.proposals.rejected == {"schema": 1}
        n = len(fake.chat_requests())
        again = run(fake, tiny_path, out, limit=1)  # a rejected answer is an answer: cached
        assert len(fake.chat_requests()) == n and again.accounting.cache_hits == 1
        assert ids(out / "proposals.jsonl") == [rec["id"]]


def test_persistent_500_leaves_the_item_for_a_rerun(fake_openai, tiny_path, tmp_path):
    out = tmp_path / "out"
    fake_openai.faults.extend(["500", "500"])  # the first propose request, both attempts
    res = runner.invoke(app, ["annotate", "run", str(tiny_path), "-o", str(out),
                              "--annotators", "llm", "--base-url", fake_openai.base_url,
                              "--model", "fake", "--concurrency", "1", "--max-attempts", "2",
                              "--limit", "2", "--no-progress"])
    assert res.exit_code == ExitCode.SERVICE, res.output
    assert "1 request(s) failed after every retry" in res.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["not_answered"] == {"failed": 1}
    assert summary["failures_by_reason"] == {"http-500": 1}
    assert summary["conversations_complete"] == 1
    first = set(ids(out / "candidates.jsonl"))
    assert first and all(i.startswith("tiny/b") for i in first)
    sent_before = len(fake_openai.chat_requests())
    again = run(fake_openai, tiny_path, out, limit=2)
    assert again.complete and again.conversations_complete == 2
    # Only the failed conversation's requests went out again: 1 propose + 2 verify.
    assert len(fake_openai.chat_requests()) - sent_before == 3
    for name in ("proposals.jsonl", "candidates.jsonl"):
        assert len(ids(out / name)) == len(set(ids(out / name)))
    assert {parse_span_id(i)[0] for i in ids(out / "candidates.jsonl")} == {"tiny/a", "tiny/b"}


def test_refusal_stops_with_one_clear_line(tiny_path, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong-key-123")
    with FakeOpenAI(api_key="sk-right") as fake:
        res = runner.invoke(app, ["annotate", "propose", str(tiny_path), "-o",
                                  str(tmp_path / "p.jsonl"), "--base-url", fake.base_url,
                                  "--model", "fake", "--no-progress"])
    assert res.exit_code == ExitCode.SERVICE
    assert "HTTP 401" in res.output and "check OPENAI_API_KEY" in res.output
    assert "sk-wrong-key-123" not in res.output and "Traceback" not in res.output


def test_unreachable_endpoint_is_a_service_error(tiny_path, tmp_path):
    from mtcabench.services.llm_server import free_port

    with pytest.raises(ServiceError, match="cannot reach"):
        annotate_run(tiny_path, tmp_path / "o", annotators="llm", model="m",
                     base_url=f"http://127.0.0.1:{free_port()}/v1", max_attempts=2,
                     backoff_s=0.01, progress=False)


def test_budget_stops_cleanly_and_a_rerun_resumes(fake_openai, tiny_path, tmp_path):
    out = tmp_path / "out"
    # Enough for about two requests of the tiny conversations, not for all nine.
    with pytest.raises(Stopped, match="budget of 3000 tokens reached") as info:
        run(fake_openai, tiny_path, out, budget=Budget(max_tokens=3000))
    summary = info.value.summary
    assert summary.accounting.spent_tokens <= 3000
    assert summary.not_answered["budget"] >= 1 and summary.accounting.requests >= 1
    assert json.loads((out / "summary.json").read_text())["stopped"].startswith("budget")
    sent = len(fake_openai.chat_requests())
    assert sent == summary.accounting.requests  # nothing sent beyond what was counted
    done = run(fake_openai, tiny_path, out)
    assert done.complete and done.conversations_complete == 3
    assert done.accounting.cache_hits == sent  # nothing paid for twice
    assert len(ids(out / "candidates.jsonl")) == len(set(ids(out / "candidates.jsonl"))) == 6


def test_requests_in_flight_are_bounded(tiny_path, tmp_path):
    from tests.support.annotate_data import good_propose_table, good_verify

    with FakeOpenAI(script_responder(good_propose_table(), default_verify=good_verify),
                    latency_s=0.3) as fake:
        summary = run(fake, tiny_path, tmp_path / "o", concurrency=2)
        assert fake.max_in_flight == 2 and summary.complete
        assert summary.accounting.requests == 9


def test_identical_requests_in_flight_are_sent_once(tmp_path, tiny_convs):
    from tests.support.annotate_data import good_propose_table, good_verify

    from mtcabench.io import write_records

    # Two conversations with the same turns under different ids make the same requests.
    twin = tiny_convs[0].model_copy(update={"id": "tiny/a-twin"})
    path = tmp_path / "twins.jsonl"
    write_records(path, [tiny_convs[0], twin])
    with FakeOpenAI(script_responder(good_propose_table(), default_verify=good_verify),
                    latency_s=0.3) as fake:
        summary = run(fake, path, tmp_path / "o", concurrency=4)
        assert len(fake.chat_requests()) == 3  # 1 propose + 2 verify, not twice that
    assert summary.accounting.cache_hits == 3 and summary.complete
    cands = ids(tmp_path / "o" / "candidates.jsonl")
    assert len(cands) == 4 and sum(i.startswith("tiny/a-twin#") for i in cands) == 2
