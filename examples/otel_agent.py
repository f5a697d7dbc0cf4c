"""A support agent instrumented with plain OpenTelemetry, as the GenAI semantic conventions
describe it: one ``invoke_agent`` span, a ``chat`` span per model call carrying the messages
(``gen_ai.system_instructions``, ``gen_ai.input.messages``, ``gen_ai.output.messages`` as
JSON) and an ``execute_tool`` span per tool call, all under one ``gen_ai.conversation.id``.

The "model" is scripted (it calls ``get_order`` for the order id in the question, then answers
from the tool's result), so the run needs no LLM and is the same every time; replace
``scripted_model`` by your client call and the spans stay as they are. The spans go to an
OTLP HTTP endpoint (``--endpoint``, e.g. Phoenix's ``http://localhost:6006/v1/traces``)
and/or to an OTLP JSON file (``--out``), the log ``mtcabench explain`` reads:

    python examples/otel_agent.py --out support.otel.json
    python examples/otel_agent.py --out support.otel.json --endpoint http://localhost:6006/v1/traces
    mtcabench explain support.otel.json --phoenix http://localhost:6006

Needs the ``otel`` extra (``pip install 'mtcabench[otel]'``: the OpenTelemetry SDK and its
OTLP exporter).
"""

from __future__ import annotations

import argparse
import json
import re
import uuid
from typing import Any

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from mtcabench.explainer import write_otlp_file

SYSTEM = ("You are the support agent of Acme Books. Look orders up with get_order before "
          "you answer; answer in one sentence.")
QUESTION = "Hi, this is Dana. Where is my order A-7731 and when will it arrive?"
ORDERS = {"A-7731": {"order_id": "A-7731", "item": "The Left Hand of Darkness",
                     "status": "shipped", "carrier": "DHL", "tracking": "JD014600003SE",
                     "delivery_date": "2024-03-05"}}


def get_order(order_id: str) -> dict[str, Any]:
    return ORDERS.get(order_id, {"error": f"no order {order_id}"})


def scripted_model(messages: list[dict]) -> dict:
    """A GenAI output message: a get_order call for the question's order id, then, once the
    result is in, the answer."""
    results = [p for m in messages for p in m["parts"] if p["type"] == "tool_call_response"]
    if not results:
        order_id = re.search(r"[A-Z]-\d{4}", messages[-1]["parts"][0]["content"]).group(0)
        return {"role": "assistant", "finish_reason": "tool_call", "parts": [
            {"type": "tool_call", "id": "call_1", "name": "get_order",
             "arguments": {"order_id": order_id}}]}
    order = results[-1]["response"]
    text = (f"Your order {order['order_id']} ({order['item']}) has {order['status']} with "
            f"{order['carrier']}, tracking {order['tracking']}, and arrives on "
            f"{order['delivery_date']}.")
    return {"role": "assistant", "finish_reason": "stop",
            "parts": [{"type": "text", "content": text}]}


def run(tracer) -> str:
    conversation = str(uuid.uuid4())
    history = [{"role": "user", "parts": [{"type": "text", "content": QUESTION}]}]
    with tracer.start_as_current_span("invoke_agent support", attributes={
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "support",
            "gen_ai.conversation.id": conversation}):
        while True:
            with tracer.start_as_current_span("chat scripted-model") as span:
                output = scripted_model(history)
                span.set_attributes({
                    "gen_ai.operation.name": "chat", "gen_ai.request.model": "scripted-model",
                    "gen_ai.conversation.id": conversation,
                    "gen_ai.system_instructions": json.dumps([{"type": "text",
                                                               "content": SYSTEM}]),
                    "gen_ai.input.messages": json.dumps(history),
                    "gen_ai.output.messages": json.dumps([output])})
            history.append({k: v for k, v in output.items() if k != "finish_reason"})
            calls = [p for p in output["parts"] if p["type"] == "tool_call"]
            if not calls:
                return output["parts"][0]["content"]
            for call in calls:
                with tracer.start_as_current_span(f"execute_tool {call['name']}") as span:
                    result = get_order(**call["arguments"])
                    span.set_attributes({
                        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": call["name"],
                        "gen_ai.tool.call.id": call["id"], "gen_ai.conversation.id": conversation,
                        "gen_ai.tool.call.arguments": json.dumps(call["arguments"]),
                        "gen_ai.tool.call.result": json.dumps(result)})
                history.append({"role": "tool", "parts": [
                    {"type": "tool_call_response", "id": call["id"], "response": result}]})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--endpoint", help="OTLP HTTP endpoint, e.g. "
                        "http://localhost:6006/v1/traces (Phoenix)")
    parser.add_argument("--out", help="also write the spans as an OTLP JSON file")
    args = parser.parse_args()
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "support-agent"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    if args.endpoint:
        provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=args.endpoint)))
    answer = run(provider.get_tracer("support-agent"))
    provider.shutdown()
    print(answer)
    if args.out:
        write_otlp_file(memory.get_finished_spans(), args.out)
        print(f"wrote {len(memory.get_finished_spans())} spans to {args.out}")


if __name__ == "__main__":
    main()
