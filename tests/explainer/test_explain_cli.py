"""`mtcabench explain` and `mtcabench.explain` on transcripts that are not from TauBench and on
TauBench runs (real model): the terminal tree, explain.json and the HTML pages."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

import mtcabench
from mtcabench.lineage import propose_conversation
from mtcabench.cli import app
from mtcabench.errors import ExitCode
from mtcabench.evaluate import AttnTraceSettings, Tracer, TraceSettings
from mtcabench.graph import check_graph
from mtcabench.model import EdgeKind, ProvenanceGraph, Role
from mtcabench.transcripts import read_transcript

pytestmark = pytest.mark.model

HERE = Path(__file__).parents[1] / "transcripts" / "examples"
REFUND = HERE / "refund_agent.json"
runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, ["explain", *map(str, args)])


def tree_lines(output: str) -> list[str]:
    return [x for x in output.splitlines() if "turn " in x]


def test_openai_transcript_tree_json_and_pages(tmp_path):
    out = tmp_path / "out"
    res = invoke(REFUND, "--method", "tokengeist", "--method", "flat", "--out", out)
    assert res.exit_code == 0, res.output
    conv = read_transcript(REFUND)
    data = json.loads((out / "explain.json").read_text())
    assert data["kind"] == "explanation" and data["conversation"] == "refund_agent"
    assert data["model"] == "smollm2-135m-instruct" and data["forward_passes"] in (1, 2)  # (+ probe)
    # a versioned record with the parameters a submission header of the same run holds
    assert data["schema_version"] == 2 and data["scorer"] == "avg-attention"
    assert data["parameters"]["seed"] == 0 and data["parameters"]["scorer_parameters"] == {}
    assert data["parameters"]["top_k"] == 3 and data["parameters"]["dtype"] == "float32"
    assert data["methods"]["tokengeist"]["d_max"] == 6 and "d_max" not in data["methods"]["flat"]
    assert data["methods"]["flat"]["scorer_parameters"] == {}
    (target,) = data["targets"]
    assert target["span"]["turn"] == 9 and target["span"]["text"] == conv.turns[9].content
    graphs = {m: ProvenanceGraph.model_validate(g) for m, g in target["graphs"].items()}
    assert set(graphs) == {"tokengeist", "flat"}
    tg, flat = graphs["tokengeist"], graphs["flat"]
    span = conv.turns[9]
    from mtcabench.model import TargetSpan

    assert not check_graph(tg, conv, TargetSpan.model_validate(target["span"]), record="t")
    assert flat.edges and all(e.child == 9 for e in flat.edges)
    assert any(e.kind is EdgeKind.STRUCTURAL for e in tg.edges)  # it went through a tool call
    # the terminal: one tree per method, every content edge with its parent and score
    lines = tree_lines(res.stdout)
    roots = [x for x in lines if x.startswith("turn 9 assistant")]
    assert len(roots) == 2 and "tokengeist" in roots[0] and "flat" in roots[1]
    assert span.content[:20] in roots[0]
    for e in tg.edges:
        if e.kind is EdgeKind.CONTENT:
            role = conv.turns[e.parent].role.value
            assert any(f"turn {e.parent} {role}  {e.score:.2f}" in x for x in lines), e
    # the pages: show's renderer, no gold, one arrow per edge
    for m, g in graphs.items():
        page = (out / f"turn9_0-{len(span.content)}.{m}.html").read_text()
        assert "no gold graph" in page and f"{m} (avg-attention)" in page
        structural = sum(e.kind is EdgeKind.STRUCTURAL for e in g.edges)
        assert page.count('class="edge pred predicted"') == len(g.edges) - structural
        assert page.count('class="edge pred structural"') == structural  # marked as such
        assert 'class="edge gold' not in page
        assert f"<mark>{span.content[:10]}" in page


def test_values_of_a_taubench_turn(taubench_airline, tmp_path):
    conv = read_transcript(taubench_airline, "task-38/trial-3")
    by_turn: dict[int, list[str]] = {}
    for c in propose_conversation(conv):
        by_turn.setdefault(c.span.turn, []).append(c.span.text)
    turn, texts = max(by_turn.items(), key=lambda kv: len(kv[1]))
    res = invoke(taubench_airline, "--conversation", "task-38/trial-3", "--turn", turn,
                 "--values", "--out", tmp_path)
    assert res.exit_code == 0, res.output
    data = json.loads((tmp_path / "explain.json").read_text())
    assert data["conversation"] == "taubench/airline/gpt-4o/task-38/trial-3"
    assert sorted(t["span"]["text"] for t in data["targets"]) == sorted(texts)
    assert data["forward_passes"] in (1, 2)  # every value in one pass (+ the sink probe)
    roots = [x for x in tree_lines(res.stdout) if x.startswith(f"turn {turn} assistant")]
    assert len(roots) == len(texts)
    for t in data["targets"]:
        graph = ProvenanceGraph.model_validate(t["graphs"]["tokengeist"])
        assert graph.target == turn
    assert len(list(tmp_path.glob("*.tokengeist.html"))) == len(texts)


def test_python_api_and_online_tracer_agree(loaded):
    messages = json.loads(REFUND.read_text())
    graph = mtcabench.explain(messages, turn=9, span="R-99120", model=loaded)
    assert isinstance(graph, ProvenanceGraph) and graph.target == 9
    content = [e for e in graph.edges if e.kind is EdgeKind.CONTENT]
    assert content and all(0 < e.score <= 1 for e in content)
    tracer = Tracer(loaded)
    for m in messages:
        tracer.add(m)
    online = tracer.explain(9, "R-99120")
    assert sorted(e.pair for e in online.edges) == sorted(e.pair for e in graph.edges)
    # offline explain takes any scorer, AttnTrace's subsampling included
    at = mtcabench.explain(messages, turn=5, span="18.40", model=loaded, scorer="attntrace",
                           settings=TraceSettings(scorers={"attntrace": AttnTraceSettings(subsamples=2)}), method="flat")
    assert at.target == 5 and all(e.child == 5 for e in at.edges)


def test_span_past_the_context_is_windowed_or_refused(tmp_path):
    res = invoke(REFUND, "--max-tokens", 250, "--out", tmp_path / "w")
    assert res.exit_code == 0, res.output
    assert "in a context window: the span's turn ends at token" in res.stdout
    record = json.loads((tmp_path / "w" / "explain.json").read_text())
    assert record["schema_version"] == 3 and record["targets"][0]["window"]["limit"] == 250
    res = invoke(REFUND, "--max-tokens", 40, "--out", tmp_path / "r")
    assert res.exit_code == ExitCode.BAD_INPUT
    # one line (after the model's loading bar), and nothing written
    lines = [x for x in res.output.splitlines() if x.strip() and "Loading weights" not in x]
    assert len(lines) == 1 and lines[0].startswith("error: ")
    assert re.search(r"turn 9: too-long: even with the content of every earlier turn but the "
                     r"system turn left out, the span's turn ends at token \d+, beyond the "
                     r"40-token limit", lines[0]), lines[0]
    assert not (tmp_path / "r").exists()


def test_start_end_on_a_jsonl_transcript():
    path = HERE / "weather_agent.jsonl"
    conv = read_transcript(path)
    text = conv.turns[5].text
    start = text.index("6.5 mm")
    res = invoke(path, "--turn", 5, "--start", start, "--end", start + 6)
    assert res.exit_code == 0, res.output
    root = tree_lines(res.stdout)[0]
    assert root.startswith("turn 5 assistant") and "\u201c6.5 mm\u201d" in root
    assert any(conv.turns[i].role is Role.TOOL and f"turn {i} tool" in res.stdout
               for i in (3, 4))


def test_every_log_format_gives_the_same_graph_offline_and_online(loaded):
    """The support conversation of tests/transcripts/logs in each of the five formats: the same
    Tokengeist graph offline; and the Tracer fed Anthropic messages as they come gives it too."""
    logs = sorted((Path(__file__).parents[1] / "transcripts" / "logs").glob("support.*.json"))
    assert len(logs) == 5
    graphs = [mtcabench.explain(p, turn=8, span="BK-7Q2", model=loaded) for p in logs]
    assert all(g == graphs[0] for g in graphs) and graphs[0].edges
    anthropic = json.loads(
        (Path(__file__).parents[1] / "transcripts" / "logs" / "support.anthropic.json").read_text())
    tracer = Tracer(loaded)
    tracer.add({"role": "system", "content": anthropic["system"][0]["text"]})
    added = [len(tracer.add(m)) for m in anthropic["messages"]]
    assert added == [1, 1, 1, 1, 3, 1]  # two tool results and the user's text: three turns
    online = tracer.explain(8, "BK-7Q2")
    assert sorted(e.pair for e in online.edges) == sorted(e.pair for e in graphs[0].edges)


def test_a_huge_tool_result_is_refused_before_the_model_is_loaded(loaded, tmp_path):
    """A 6 MB tool result: refused from the characters alone (at least n / (2 x longest
    token) tokens), before the model is loaded or anything tokenised; it took 44 s and
    1.8 GB to be refused after tokenising. The ``loaded`` fixture only makes sure the default
    model's files are on this machine (its converted copy)."""
    messages = [
        {"role": "user", "content": "Find my booking."},
        {"role": "assistant", "content": None, "tool_calls": [{
            "id": "c1", "type": "function",
            "function": {"name": "search", "arguments": "{\"q\": \"booking\"}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "x" * 6_000_000},
        {"role": "assistant", "content": "Your booking is ZX9."},
    ]
    path = tmp_path / "huge.json"
    path.write_text(json.dumps(messages))
    res = invoke(path, "--out", tmp_path / "out")
    assert res.exit_code == ExitCode.BAD_INPUT, res.output
    lines = [x for x in res.output.splitlines() if x.strip()]
    assert len(lines) == 1 and "Loading weights" not in res.output, res.output
    assert re.search(r"turn 3: the text up to the span is 6,0\d\d,\d\d\d characters, at least "
                     r"[\d,]+ tokens, more than 4 times the 8192-token limit; a window would "
                     r"leave out nearly all of it \(smollm2-135m-instruct\)", lines[0]), lines[0]
    assert not (tmp_path / "out").exists()
    # the library refuses alike, with a loaded model too
    from mtcabench.errors import InputError
    from mtcabench.explainer import explain_conversation, resolve_targets

    conv = read_transcript(path)
    with pytest.raises(InputError, match="at least [\\d,]+ tokens, more than 4 times the 8192"):
        explain_conversation(conv, resolve_targets(conv), model=loaded)
