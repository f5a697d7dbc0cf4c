"""The agent-log readers' time at 1x, 2x and 4x their input: each should grow linearly.

Run: flock /tmp/mtcabench-cpu.lock .venv/bin/python benchmarks/transcript_readers.py [--base N]
Prints, for each input shape, the time to read it at 1x, 2x and 4x its size (best of three
runs, this machine being shared and noisy) and the ratios 2x/1x and 4x/1x side by side: about
2 and 4 is linear, 4 and 16 quadratic. The shapes are the ones that went quadratic before
(docs/ingest.md, "Bounds and speed"):

- ``otel-traces``: an OTLP export of many traces (one short chat span each, a tool span each);
- ``otel-chat-spans``: one trace of many chat spans, each a sub-agent's own conversation;
- ``parallel-calls``: one chat message with many parallel tool calls, and their results;
- ``otel-flat``: OpenLLMetry's flattened attributes, many spans;
- ``inspect-samples``: an Inspect ``.eval`` archive of many samples;
- ``tracer-reader``: the online Tracer's reader fed a long session message by message.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mtcabench.transcripts import LiveReader, read_conversations  # noqa: E402


def _attr(key: str, value) -> dict:
    v = {"intValue": str(value)} if isinstance(value, int) else {"stringValue": value}
    return {"key": key, "value": v}


def _chat_span(trace: str, span: str, start: int, history: list, output: list) -> dict:
    return {"traceId": trace, "spanId": span, "name": "chat", "startTimeUnixNano": str(start),
            "attributes": [_attr("gen_ai.operation.name", "chat"),
                           _attr("gen_ai.input.messages", json.dumps(history)),
                           _attr("gen_ai.output.messages", json.dumps(output))]}


def _export(spans: list) -> dict:
    return {"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}


def _text(role: str, text: str) -> dict:
    return {"role": role, "parts": [{"type": "text", "content": text}]}


def otel_traces(n: int) -> dict:
    spans = []
    for k in range(n):
        call = {"role": "assistant", "parts": [{"type": "tool_call", "id": f"c{k}",
                                                "name": "lookup", "arguments": {"k": k}}]}
        spans.append(_chat_span(f"t{k}", f"s{k}", 10 * k, [_text("user", f"question {k}")],
                                [call]))
        spans.append({"traceId": f"t{k}", "spanId": f"x{k}", "name": "execute_tool",
                      "startTimeUnixNano": str(10 * k + 5),
                      "attributes": [_attr("gen_ai.operation.name", "execute_tool"),
                                     _attr("gen_ai.tool.call.id", f"c{k}"),
                                     _attr("gen_ai.tool.call.result", f"result {k}")]})
    return _export(spans)


def otel_chat_spans(n: int) -> dict:
    spans = [_chat_span("t", f"s{k}", k, [_text("user", f"task {k} of a sub-agent")],
                        [_text("assistant", f"done {k}")]) for k in range(n)]
    return _export(spans)


def parallel_calls(n: int) -> list:
    calls = [{"id": f"call_{k}", "type": "function",
              "function": {"name": "get", "arguments": json.dumps({"k": k})}} for k in range(n)]
    results = [{"role": "tool", "tool_call_id": f"call_{k}", "content": f"r{k}"}
               for k in range(n)]
    return [{"role": "user", "content": "fetch all"},
            {"role": "assistant", "content": None, "tool_calls": calls}, *results]


def otel_flat(n: int) -> dict:
    spans = []
    for k in range(n):
        attrs = [_attr("gen_ai.prompt.0.role", "user"), _attr("gen_ai.prompt.0.content", f"q{k}"),
                 _attr("gen_ai.completion.0.role", "assistant"),
                 _attr("gen_ai.completion.0.content", f"a{k}")]
        spans.append({"traceId": f"t{k}", "spanId": f"s{k}", "name": "chat",
                      "startTimeUnixNano": str(k), "attributes": attrs})
    return _export(spans)


def inspect_archive(n: int, path: Path) -> None:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("header.json", json.dumps({"version": 2}))
        for k in range(n):
            sample = {"id": k, "epoch": 1, "messages": [
                {"role": "user", "content": f"question {k}"},
                {"role": "assistant", "content": f"answer {k}"}]}
            z.writestr(f"samples/{k}_epoch_1.json", json.dumps(sample))


def _file_reader(make: Callable[[int], object], suffix: str, folder: Path
                 ) -> Callable[[int], Callable[[], object]]:
    def prepare(n: int) -> Callable[[], object]:
        path = folder / f"{make.__name__}-{n}{suffix}"
        path.write_text(json.dumps(make(n)), encoding="utf-8")
        return lambda: read_conversations(path)
    return prepare


def _inspect_reader(folder: Path) -> Callable[[int], Callable[[], object]]:
    def prepare(n: int) -> Callable[[], object]:
        path = folder / f"inspect-{n}.eval"
        inspect_archive(n, path)
        return lambda: read_conversations(path)
    return prepare


def _tracer_reader(n: int) -> Callable[[], object]:
    messages = []
    for k in range(n // 2):
        messages += [{"role": "user", "content": f"step {k}"},
                     {"role": "assistant", "content": f"ok {k}"}]

    def run() -> None:
        reader = LiveReader()
        for m in messages:
            reader.add(m)
    return run


def best_of(repeats: int, fn: Callable[[], object]) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=int, default=1000,
                        help="Input size at 1x (traces, spans, calls, samples, messages).")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        shapes = {
            "otel-traces": _file_reader(otel_traces, ".json", folder),
            "otel-chat-spans": _file_reader(otel_chat_spans, ".json", folder),
            "parallel-calls": _file_reader(parallel_calls, ".json", folder),
            "otel-flat": _file_reader(otel_flat, ".json", folder),
            "inspect-samples": _inspect_reader(folder),
            "tracer-reader": _tracer_reader,
        }
        print(f"reader time by input size (base {args.base}, best of {args.repeats})")
        print(f"{'shape':<16} {'1x s':>8} {'2x s':>8} {'4x s':>8} {'2x/1x':>6} {'4x/1x':>6}")
        for name, prepare in shapes.items():
            times = [best_of(args.repeats, prepare(args.base * m)) for m in (1, 2, 4)]
            print(f"{name:<16} {times[0]:>8.3f} {times[1]:>8.3f} {times[2]:>8.3f} "
                  f"{times[1] / times[0]:>6.2f} {times[2] / times[0]:>6.2f}")


if __name__ == "__main__":
    main()
