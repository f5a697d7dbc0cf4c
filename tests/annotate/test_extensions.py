"""The two extension points at the HTTP layer: providers (Azure OpenAI, OpenAI, a toy one
registered here) and phases (a toy phase registered here), each one class and a registration.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil

import openai
import pytest
from tests.support.annotate_data import good_propose_table, good_verify
from tests.support.annotate_fakes import FakeOpenAI, script_responder
from pydantic import Field
from typer.testing import CliRunner

from mtcabench.annotate import annotate_run
from mtcabench.annotate.llm import Answer, Endpoint, Provider, register_provider
from mtcabench.annotate.llm.providers import secret_from_env, unregister_provider
from mtcabench.annotate.phases import Phase, register_phase, unregister_phase
from mtcabench.annotate.phases.checks import now, parse_answer
from mtcabench.annotate.phases.schema import AnswerModel
from mtcabench.annotate.phases.templates import PROMPTS_DIR
from mtcabench.cli import app
from mtcabench.errors import InputError, ServiceError
from mtcabench.io import iter_json_lines
from mtcabench.model import Candidate, Conversation, Proposal, Rejection

runner = CliRunner()
AZURE_KEY = "az-key-0123456789abcdef"
VERSION = "2024-10-21"


def responder():
    return script_responder(good_propose_table(), default_verify=good_verify)


def records(path):
    return [obj for _, obj in iter_json_lines(path)]


@pytest.fixture
def clean_env(monkeypatch):
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "AZURE_OPENAI_ENDPOINT",
                 "AZURE_OPENAI_API_KEY", "OPENAI_API_VERSION", "OPENAI_ORG_ID",
                 "OPENAI_PROJECT_ID"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


@pytest.fixture
def azure(clean_env):
    with FakeOpenAI(responder(), api_key=AZURE_KEY) as fake:
        clean_env.setenv("AZURE_OPENAI_ENDPOINT", fake.root_url)
        clean_env.setenv("AZURE_OPENAI_API_KEY", AZURE_KEY)
        clean_env.setenv("OPENAI_API_VERSION", VERSION)
        yield fake


# ---------------------------------------------------------------- Azure OpenAI

def test_azure_openai_takes_its_routes_key_header_and_version(azure, tiny_path, tmp_path):
    summary = annotate_run(tiny_path, tmp_path / "o", annotators="llm", model="my-deployment",
                           progress=False)
    chats = azure.chat_requests()
    assert summary.complete and len(chats) == 9 and summary.candidates.ok == 6
    for r in chats:
        assert r.path == f"/openai/deployments/my-deployment/chat/completions?api-version={VERSION}"
        assert r.headers["api-key"] == AZURE_KEY and "Authorization" not in r.headers
    assert summary.endpoint == f"azure:{azure.root_url}?api-version={VERSION}"
    for path in (tmp_path / "o").iterdir():
        assert AZURE_KEY.encode() not in path.read_bytes()


def test_azure_openai_batches_use_its_files_batches_and_chat_url(azure, tiny_path, tmp_path):
    summary = annotate_run(tiny_path, tmp_path / "o", annotators="llm", model="my-deployment",
                           batch=True, batch_poll_s=0.01, progress=False)
    assert summary.complete and summary.candidates.ok == 6
    paths = [re.sub(r"(file|batch)[-_]\w+", r"\1-ID", r.path) for r in azure.requests]
    q = f"?api-version={VERSION}"
    assert paths[:5] == [f"/openai/files{q}", f"/openai/batches{q}", f"/openai/batches/batch-ID{q}",
                         f"/openai/batches/batch-ID{q}", f"/openai/files/file-ID/content{q}"]
    create = next(r for r in azure.requests if r.path.startswith("/openai/batches?")).json()
    assert create["endpoint"] == "/chat/completions"
    line = json.loads(next(iter(azure.files.values())).splitlines()[0])
    assert line["url"] == "/chat/completions" and line["body"]["model"] == "my-deployment"


@pytest.mark.parametrize("missing", ["AZURE_OPENAI_API_KEY", "OPENAI_API_VERSION"])
def test_azure_openai_names_a_missing_setting(azure, tiny_path, tmp_path, clean_env, missing):
    clean_env.delenv(missing)
    with pytest.raises(InputError, match=f"Azure OpenAI needs {missing} to be set"):
        annotate_run(tiny_path, tmp_path / "o", annotators="llm", model="d", progress=False)
    assert not azure.requests


def test_a_wrong_azure_key_names_its_variable(azure, tiny_path, tmp_path, clean_env):
    clean_env.setenv("AZURE_OPENAI_API_KEY", "az-wrong")
    with pytest.raises(ServiceError, match=r"HTTP 401.*\(check AZURE_OPENAI_API_KEY\)"):
        annotate_run(tiny_path, tmp_path / "o", annotators="llm", model="d", progress=False)


# ---------------------------------------------------------------- OpenAI, and the choice

def test_openai_provider_honours_openai_base_url_and_the_sdk_headers(clean_env, tiny_path,
                                                                     tmp_path):
    with FakeOpenAI(responder(), api_key="sk-test") as fake:
        clean_env.setenv("OPENAI_API_KEY", "sk-test")
        clean_env.setenv("OPENAI_BASE_URL", fake.base_url)
        clean_env.setenv("OPENAI_ORG_ID", "org-from-env")
        summary = annotate_run(tiny_path, tmp_path / "o", annotators="llm", progress=False)
        r = fake.chat_requests()[0]
    assert summary.complete and summary.model == "gpt-4o-2024-08-06"
    assert r.json()["response_format"]["type"] == "json_schema"
    assert r.headers["Authorization"] == "Bearer sk-test"
    assert r.headers["OpenAI-Organization"] == "org-from-env"  # what the SDK gives for free


def test_base_url_beats_azure_and_a_named_provider_beats_both(azure, clean_env, tiny_path,
                                                              tmp_path):
    with FakeOpenAI(responder()) as other:
        summary = annotate_run(tiny_path, tmp_path / "a", annotators="llm", model="m",
                               base_url=other.base_url, limit=1, progress=False)
        assert summary.endpoint == other.base_url and not azure.requests
        summary = annotate_run(tiny_path, tmp_path / "b", annotators="llm", model="m",
                               provider="azure", base_url=azure.root_url, limit=1,
                               progress=False)
        assert summary.endpoint.startswith("azure:") and azure.requests
    with pytest.raises(InputError, match="--provider must be one of base-url, azure, openai"):
        annotate_run(tiny_path, tmp_path / "c", annotators="llm", provider="nope")


def test_requests_go_through_the_proxy_the_environment_names(clean_env, tiny_path, tmp_path):
    with FakeOpenAI(responder()) as proxy:
        for name in ("HTTP_PROXY", "http_proxy"):
            clean_env.setenv(name, proxy.root_url)
        for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy"):
            clean_env.delenv(name, raising=False)
        summary = annotate_run(tiny_path, tmp_path / "o", annotators="llm", model="m",
                               base_url="http://llm.mtcabench.invalid/v1", limit=1,
                               progress=False)
        paths = [r.path for r in proxy.chat_requests()]
        clean_env.setenv("NO_PROXY", "llm.mtcabench.invalid")
        with pytest.raises(ServiceError, match="cannot reach http://llm.mtcabench.invalid"):
            annotate_run(tiny_path, tmp_path / "p", annotators="llm", model="m",
                         base_url="http://llm.mtcabench.invalid/v1", limit=1, max_attempts=1,
                         progress=False)
    assert summary.complete and paths
    assert all(p == "http://llm.mtcabench.invalid/v1/chat/completions" for p in paths)


# ---------------------------------------------------------------- a toy provider

class GatewayProvider(Provider):
    """An OpenAI-compatible gateway that wants organisation and project headers."""

    name = "gateway"
    summary = "the gateway at GATEWAY_URL (key GATEWAY_KEY)"
    priority = 5  # before --base-url: GATEWAY_URL is the more specific setting

    def applies(self, want) -> bool:
        return bool(os.environ.get("GATEWAY_URL"))

    @contextlib.contextmanager
    def open(self, want):
        yield Endpoint(base_url=os.environ["GATEWAY_URL"], model=want.model or "gw-model",
                       api_key=secret_from_env("GATEWAY_KEY"), key_env="GATEWAY_KEY",
                       sdk=lambda ep, http, timeout: openai.OpenAI(
                           api_key=ep.api_key.get_secret_value(), base_url=ep.base_url,
                           organization="org-mtca", project="proj-mtca", http_client=http,
                           timeout=timeout))  # max_retries left at the SDK's: the client fixes it


@pytest.fixture
def gateway(clean_env):
    register_provider(GatewayProvider)
    with FakeOpenAI(responder(), api_key="gw-key") as fake:
        clean_env.setenv("GATEWAY_URL", fake.base_url)
        clean_env.setenv("GATEWAY_KEY", "gw-key")
        yield fake
    unregister_provider(GatewayProvider.name)


def test_a_registered_provider_is_chosen_and_shapes_the_requests(gateway, tiny_path, tmp_path):
    res = runner.invoke(app, ["annotate", "run", str(tiny_path), "-o", str(tmp_path / "o"),
                              "--annotators", "llm", "--no-progress"])
    assert res.exit_code == 0, res.output
    r = gateway.chat_requests()[0]
    assert r.headers["Authorization"] == "Bearer gw-key"
    assert r.headers["OpenAI-Organization"] == "org-mtca"
    assert r.headers["OpenAI-Project"] == "proj-mtca"
    assert r.json()["model"] == "gw-model"


def test_a_registered_provider_keeps_our_retry_policy(gateway, clean_env, tiny_path, tmp_path):
    clean_env.setenv("GATEWAY_KEY", "gw-wrong")
    with pytest.raises(ServiceError, match="HTTP 401.*check GATEWAY_KEY"):
        annotate_run(tiny_path, tmp_path / "x", annotators="llm", limit=1, progress=False)
    clean_env.setenv("GATEWAY_KEY", "gw-key")
    gateway.faults.extend(["500", "500"])
    summary = annotate_run(tiny_path, tmp_path / "o", annotators="llm", provider="gateway",
                           limit=1, max_attempts=2, backoff_s=0.01, progress=False)
    # Two tries of the first request (ours, counted), none of the SDK's own on top.
    assert summary.as_dict()["failures_by_reason"] == {"http-500": 1}
    assert summary.as_dict()["retries_by_reason"] == {"http-500": 1}


# ---------------------------------------------------------------- a toy phase

class ConfirmOut(AnswerModel):
    """A yes or no on a proposed graph, with a confidence."""

    supported: bool
    confidence: float = Field(ge=0, le=1)


class ConfirmPhase(Phase):
    """A cheaper second phase: keep the proposed graph when the model confirms it."""

    name = "confirm"
    output = ConfirmOut
    consumes = Proposal
    produces = Candidate
    max_tokens = 64
    compact_max_tokens = 32

    def units(self, conv: Conversation, upstream: Proposal) -> list[Proposal]:
        return [upstream] if upstream.status == "ok" else []

    def messages(self, conv: Conversation, unit: Proposal) -> list[dict[str, str]]:
        return self.template.render(turn=unit.span.turn, span=unit.span.text,
                                    parents=", ".join(str(p) for _, p in unit.graph.pairs()))

    def parse(self, conv: Conversation, unit: Proposal, answer: Answer) -> list[Candidate]:
        out, rejections = parse_answer(answer.content, answer.finish_reason, ConfirmOut)
        if out is not None and not out.supported:
            rejections = [Rejection(reason="unconfirmed", detail="the model said no")]
        base = dict(conversation_id=conv.id, span=unit.span, annotator=self.annotator,
                    proposal_annotator=unit.annotator, created_at=now())
        if rejections:
            return [Candidate(id=f"{unit.id}/rejected", status="rejected", rejections=rejections,
                              raw_output=answer.content, **base)]
        return [Candidate(id=unit.id, dependency_type=unit.dependency_type, graph=unit.graph,
                          confidence=out.confidence, **base)]


CONFIRM_TEMPLATE = """---
phase: confirm
version: confirm-v1
---
## system
Answer with JSON only.
## user
CONFIRM SPAN in turn $turn: "$span" comes from turns $parents. Is that right?
"""


@pytest.fixture
def confirm_phase(tmp_path):
    register_phase(ConfirmPhase)
    prompts = tmp_path / "prompts"
    shutil.copytree(PROMPTS_DIR, prompts)
    (prompts / "confirm-v1.md").write_text(CONFIRM_TEMPLATE)
    yield prompts
    unregister_phase(ConfirmPhase.name)


def test_a_registered_phase_runs_in_the_chain(confirm_phase, tiny_path, tmp_path):
    base = responder()

    def respond(body):
        if "CONFIRM SPAN" in body["messages"][1]["content"]:
            assert body["response_format"]["json_schema"]["name"] == "confirm_output"
            assert body["max_tokens"] == 64
            return json.dumps({"supported": '"$' not in body["messages"][1]["content"],
                               "confidence": 0.7})
        return base(body)

    with FakeOpenAI(respond) as fake:
        res = runner.invoke(app, ["annotate", "run", str(tiny_path), "-o", str(tmp_path / "o"),
                                  "--annotators", "llm", "--phases", "propose,confirm",
                                  "--prompts-dir", str(confirm_phase), "--base-url",
                                  fake.base_url, "--model", "fake", "--no-progress"])
    assert res.exit_code == 0, res.output
    cands = records(tmp_path / "o" / "candidates.jsonl")
    ok = [c for c in cands if c["status"] == "ok"]
    # The reservation ids are confirmed with the proposal's graph; the prices are not.
    assert len(ok) == 3 and {c["span"]["text"] for c in ok} == {"NO6JO3", "4WQ150", "VAAOXJ"}
    assert {c["annotator"]["prompt_version"] for c in ok} == {"confirm-v1"}
    assert {c["confidence"] for c in ok} == {0.7}
    props = {p["id"]: p for p in records(tmp_path / "o" / "proposals.jsonl")}
    assert all(c["graph"] == props[c["id"]]["graph"] for c in ok)
    assert {r["rejections"][0]["reason"] for r in cands if r["status"] != "ok"} == {"unconfirmed"}


def test_a_chain_that_does_not_fit_is_refused(confirm_phase, tiny_path, tmp_path):
    for phases, message in ((("confirm",), "cannot start a chain"),
                            (("propose", "confirm", "verify"), "cannot follow 'confirm'"),
                            (("propose",), "must make candidates"),
                            (("propose", "nope"), "unknown annotation phase 'nope'")):
        with pytest.raises(InputError, match=message):
            annotate_run(tiny_path, tmp_path / "o", annotators="llm", base_url="http://x/v1",
                         model="m", phases=phases, prompts_dir=confirm_phase)
