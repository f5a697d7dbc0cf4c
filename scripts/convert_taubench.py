"""Write TauBench runs in the four other agent-log formats, read them back, compare the turns.

    .venv/bin/python scripts/convert_taubench.py /work/shared/raw/tau-bench/gpt-4o-airline.json \\
        --runs 40 --out /tmp/tau-logs

Each of the first ``--runs`` runs of a TauBench trajectory file, read by ``ingest taubench``,
is written as an OpenAI Responses log and an Anthropic Messages log (one file per run), as
OpenTelemetry GenAI spans (one OTLP JSON export, one trace per run, the spans written in a
shuffled order) and as an Inspect AI eval log (one sample per run, ``.json`` and ``.eval``).
Every file is read back with ``ingest transcripts`` and each run's turns (roles, texts,
calls, the call each result answers) are compared with ``ingest taubench``'s; the script
prints one line per format and exits 1 on any difference. The writers follow each format's
published shape, not our reader (tests/transcripts/test_log_formats.py uses them too).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
import zipfile
from pathlib import Path

from mtcabench.ingest import ingest_transcripts, read_taubench
from mtcabench.io import load_conversations
from mtcabench.model import Conversation, Role, Turn


def _args(turn: Turn) -> list[tuple[str, str, str]]:
    return [(c.id, c.name, json.dumps(c.arguments)) for c in turn.tool_calls]


def _system_first(conv: Conversation) -> tuple[str | None, list[Turn]]:
    turns = conv.turns
    if turns and turns[0].role is Role.SYSTEM:
        return turns[0].content, turns[1:]
    return None, turns


def to_responses(conv: Conversation) -> dict:
    """A Responses request with its last response's items as ``output``; each model response
    starts with a reasoning item."""
    system, turns = _system_first(conv)
    items: list[dict] = []
    for t in turns:
        if t.role is Role.ASSISTANT:
            items.append({"type": "reasoning", "id": f"rs_{t.index}", "summary": []})
            if t.content or not t.tool_calls:
                items.append({"type": "message", "role": "assistant", "content": [
                    {"type": "output_text", "text": t.content, "annotations": []}]})
            items += [{"type": "function_call", "call_id": i, "name": n, "arguments": a}
                      for i, n, a in _args(t)]
        elif t.role is Role.TOOL:
            items.append({"type": "function_call_output", "call_id": t.tool_call_id,
                          "output": t.content})
        else:
            items.append({"type": "message", "role": t.role.value,
                          "content": [{"type": "input_text", "text": t.content}]})
    last_input = max([k for k, i in enumerate(items) if i["type"] == "function_call_output"
                      or i.get("role") in {"user", "system"}], default=-1)
    log: dict = {"model": "gpt-4o"} | ({"instructions": system} if system is not None else {})
    return log | {"input": items[: last_input + 1], "output": items[last_input + 1:]}


def to_anthropic(conv: Conversation) -> dict:
    """A Messages request: tool results (and the user's text after them) in user messages."""
    system, turns = _system_first(conv)
    messages: list[dict] = []
    for t in turns:
        if t.role is Role.ASSISTANT:
            blocks = [{"type": "thinking", "thinking": "", "signature": "sig"}]
            blocks += [{"type": "text", "text": t.content}] if t.content or not t.tool_calls else []
            blocks += [{"type": "tool_use", "id": i, "name": n, "input": json.loads(a)}
                       for i, n, a in _args(t)]
            messages.append({"role": "assistant", "content": blocks})
            continue
        block = ({"type": "tool_result", "tool_use_id": t.tool_call_id, "content": t.content}
                 if t.role is Role.TOOL else {"type": "text", "text": t.content})
        if messages and messages[-1]["role"] == "user" and t.role is Role.USER or (
                messages and messages[-1]["role"] == "user" and t.role is Role.TOOL
                and messages[-1]["content"][-1]["type"] == "tool_result"):
            messages[-1]["content"].append(block)
        else:
            messages.append({"role": "user", "content": [block]})
    return {"model": "claude"} | ({"system": system} if system is not None else {}) | {
        "messages": messages}


def _genai(t: Turn) -> dict:
    if t.role is Role.ASSISTANT:
        parts = [{"type": "text", "content": t.content}] if t.content or not t.tool_calls else []
        parts += [{"type": "tool_call", "id": i, "name": n, "arguments": json.loads(a)}
                  for i, n, a in _args(t)]
        return {"role": "assistant", "parts": parts}
    if t.role is Role.TOOL:
        return {"role": "tool", "parts": [{"type": "tool_call_response", "id": t.tool_call_id,
                                           "response": t.content}]}
    return {"role": t.role.value, "parts": [{"type": "text", "content": t.content}]}


def _attr(key: str, value) -> dict:
    text = value if isinstance(value, str) else json.dumps(value)
    return {"key": key, "value": {"stringValue": text}}


def to_otel_spans(conv: Conversation, trace_id: str) -> list[dict]:
    """One chat span per model response (the history as input, the response as output), one
    execute_tool span per tool result, and a last chat span with no output where user turns
    follow the last response (a request that got no answer)."""
    system, turns = _system_first(conv)
    spans, clock = [], 1_700_000_000_000_000_000
    sys_attr = [_attr("gen_ai.system_instructions", [{"type": "text", "content": system}])
                ] if system is not None else []

    def span(name: str, attrs: list[dict]) -> dict:
        nonlocal clock
        clock += 1_000_000
        sid = hashlib.sha256(f"{trace_id}/{len(spans)}".encode()).hexdigest()[:16]
        return {"traceId": trace_id, "spanId": sid, "name": name, "kind": 3,
                "startTimeUnixNano": str(clock), "endTimeUnixNano": str(clock + 500_000),
                "attributes": attrs}

    def chat(history: list[Turn], output: Turn | None) -> dict:
        attrs = [_attr("gen_ai.operation.name", "chat"), *sys_attr,
                 _attr("gen_ai.input.messages", [_genai(h) for h in history])]
        if output is not None:
            attrs.append(_attr("gen_ai.output.messages", [_genai(output) | {
                "finish_reason": "tool_call" if output.tool_calls else "stop"}]))
        return span("chat gpt-4o", attrs)

    for k, t in enumerate(turns):
        if t.role is Role.ASSISTANT:
            spans.append(chat(turns[:k], t))
        elif t.role is Role.TOOL:
            spans.append(span(f"execute_tool {t.name}", [
                _attr("gen_ai.operation.name", "execute_tool"), _attr("gen_ai.tool.name", t.name),
                _attr("gen_ai.tool.call.id", t.tool_call_id),
                _attr("gen_ai.tool.call.result", t.content)]))
    answered = max([k for k, t in enumerate(turns) if t.role is Role.ASSISTANT], default=-1)
    if any(t.role is Role.USER for t in turns[answered + 1:]):
        spans.append(chat(turns, None))
    return spans


def to_otel(convs: list[Conversation], seed: int = 0) -> tuple[dict, dict[str, str]]:
    """One OTLP JSON export of every conversation, one trace each, spans in shuffled order;
    and each conversation id's trace id."""
    traces = {c.id: hashlib.sha256(c.id.encode()).hexdigest()[:32] for c in convs}
    spans = [s for c in convs for s in to_otel_spans(c, traces[c.id])]
    random.Random(seed).shuffle(spans)
    half = len(spans) // 2
    scope = {"name": "convert_taubench"}
    return {"resourceSpans": [{"resource": {}, "scopeSpans": [{"scope": scope, "spans": part}]}
                              for part in (spans[:half], spans[half:])]}, traces


def _inspect_message(t: Turn) -> dict:
    msg: dict = {"role": t.role.value, "content": t.content}
    if t.role is Role.ASSISTANT:
        msg["content"] = [{"type": "reasoning", "reasoning": "", "redacted": True},
                          {"type": "text", "text": t.content}]
        msg["tool_calls"] = [{"id": i, "function": n, "arguments": json.loads(a),
                              "type": "function"} for i, n, a in _args(t)]
    if t.role is Role.TOOL:
        msg |= {"tool_call_id": t.tool_call_id, "function": t.name}
    return msg


def to_inspect(convs: list[Conversation]) -> dict:
    """An Inspect eval log, one sample per conversation (id: the task, epoch: trial + 1)."""
    samples = [{"id": c.task_id, "epoch": (c.trial or 0) + 1, "input": "",
                "messages": [_inspect_message(t) for t in c.turns]} for c in convs]
    return {"version": 2, "status": "success",
            "eval": {"task": "taubench", "model": "openai/gpt-4o", "run_id": "convert"},
            "samples": samples}


def write_eval(path: Path, log: dict) -> None:
    """An Inspect ``.eval`` archive of ``log``: a header and one file per sample."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("header.json", json.dumps({k: v for k, v in log.items() if k != "samples"}))
        for s in log["samples"]:
            z.writestr(f"samples/{s['id']}_epoch_{s['epoch']}.json", json.dumps(s))


def write_all(convs: list[Conversation], out: Path) -> dict[str, dict[str, Path | str]]:
    """Every conversation in every format under ``out``; per format, each taubench id's file
    and the id ``ingest transcripts`` gives it."""
    out.mkdir(parents=True, exist_ok=True)
    plan: dict[str, dict[str, tuple[Path, str]]] = {"openai-responses": {},
                                                   "anthropic-messages": {}}
    for c in convs:
        stem = f"task-{c.task_id}-trial-{c.trial}"
        for fmt, write in (("openai-responses", to_responses), ("anthropic-messages", to_anthropic)):
            path = out / fmt / f"{stem}.json"
            path.parent.mkdir(exist_ok=True)
            path.write_text(json.dumps(write(c), indent=1), encoding="utf-8")
            plan[fmt][c.id] = (path, stem)
    otel, traces = to_otel(convs)
    (out / "traces.otel.json").write_text(json.dumps(otel), encoding="utf-8")
    plan["otel-genai"] = {c.id: (out / "traces.otel.json", f"traces.otel/{traces[c.id]}")
                          for c in convs}
    log = to_inspect(convs)
    (out / "taubench.inspect.json").write_text(json.dumps(log), encoding="utf-8")
    write_eval(out / "taubench.eval", log)
    plan["inspect-ai"] = {c.id: (out / "taubench.inspect.json",
                                 f"taubench.inspect/{c.task_id}/epoch-{(c.trial or 0) + 1}")
                          for c in convs}
    plan["inspect-ai (.eval)"] = {c.id: (out / "taubench.eval",
                                         f"taubench/{c.task_id}/epoch-{(c.trial or 0) + 1}")
                                  for c in convs}
    return plan


def same_turns(a: Conversation, b: Conversation) -> bool:
    """Roles, texts, calls, and which call each result answers (and the tools' names)."""
    return [t.model_dump() for t in a.turns] == [t.model_dump() for t in b.turns]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trajectories", type=Path)
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    convs = list(read_taubench(args.trajectories))
    # Distinct (task, trial) pairs only: a trial id repeated upstream would share a file.
    seen, chosen = set(), []
    for c in convs:
        if (c.task_id, c.trial) not in seen and len(chosen) < args.runs:
            seen.add((c.task_id, c.trial))
            chosen.append(c)
    plan = write_all(chosen, args.out)
    failed = 0
    print(f"{len(chosen)} runs of {args.trajectories.name}, written under {args.out}")
    for fmt, files in plan.items():
        paths = sorted({p for p, _ in files.values()})
        records = args.out / f"read-back.{fmt.split()[0]}.{len(paths)}.jsonl"
        ingest_transcripts(paths, records, progress=False)
        read = load_conversations(records)
        same = sum(same_turns(c, read[files[c.id][1]]) for c in chosen
                   if files[c.id][1] in read)
        failed += len(chosen) - same
        print(f"{fmt:22} {len(paths):3} file(s)  {len(read):3} conversations read back  "
              f"{same:3}/{len(chosen)} with the same turns as ingest taubench")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
