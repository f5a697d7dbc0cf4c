"""Long conversations for lineage's linear-time checks (tests/annotate/lineage and
benchmarks/lineage_long.py): the TauBench runs laid end to end, and a paging agent; and one
answer listing a long search result, for the counterfactual draw
(benchmarks/counterfactual_scaling.py)."""

from __future__ import annotations

import json

from mtcabench.model import Conversation, Role, ToolCall, Turn


def long_conversation(convs: list[Conversation], turns: int) -> Conversation:
    """One conversation of ``turns`` turns made of ``convs`` end to end (see the module)."""
    out: list[Turn] = [convs[0].turns[0].model_copy(update={"index": 0})]
    rounds = 0
    while len(out) < turns:
        for n, conv in enumerate(convs):
            tag = f"r{rounds}c{n}-"
            for turn in conv.turns:
                if turn.role is Role.SYSTEM:
                    continue
                if len(out) >= turns and turn.role is not Role.TOOL:
                    break
                out.append(Turn(
                    index=len(out), role=turn.role, content=turn.content, name=turn.name,
                    tool_call_id=tag + turn.tool_call_id if turn.tool_call_id else None,
                    tool_calls=[ToolCall(id=tag + c.id, name=c.name, arguments=c.arguments)
                                for c in turn.tool_calls]))
            if len(out) >= turns:
                break
        rounds += 1
    return Conversation(id=f"long-{turns}", source="benchmark", domain="airline", turns=out)


def cursor_chain(turns: int) -> Conversation:
    """A paging agent: each call passes the cursor the previous result gave, each answer
    restates the page's reservation and the next cursor. Every cursor's chain reaches back
    through every earlier call: the graphs that made lineage's output quadratic."""
    out = [Turn(index=0, role=Role.SYSTEM, content="You are an airline agent."),
           Turn(index=1, role=Role.USER, content="List every trip of user mia_li_3668.")]
    page = 0
    while len(out) + 3 <= turns:
        cursor, nxt = f"CUR{page:06d}", f"CUR{page + 1:06d}"
        args = {"user_id": "mia_li_3668"} | ({"cursor": cursor} if page else {})
        call = ToolCall(id=f"call-{page}", name="list_reservations", arguments=args)
        out += [
            Turn(index=len(out), role=Role.ASSISTANT, tool_calls=[call]),
            Turn(index=len(out) + 1, role=Role.TOOL, tool_call_id=call.id,
                 name=call.name, content=json.dumps(
                     {"reservations": [f"R{page:05d}X"], "next_cursor": nxt})),
            Turn(index=len(out) + 2, role=Role.ASSISTANT,
                 content=f"Page {page + 1}: reservation R{page:05d}X; next cursor {nxt}."),
        ]
        page += 1
    return Conversation(id=f"chain-{turns}", source="benchmark", domain="airline", turns=out)


def _twelve(hms: str) -> str:
    h, m = int(hms[:2]), int(hms[3:5])
    return f"{(h % 12) or 12:02d}:{m:02d} {'AM' if h < 12 else 'PM'}"


def flight_listing(n: int) -> Conversation:
    """A search result of ``n`` flights (every field distinct across flights), then an answer
    listing each, one line each: about 3 n^2 possible counterfactual edits (each of the
    answer's values can become the same field of any other flight)."""
    found = [{"flight_number": f"HAT{i:04d}", "origin": "JFK", "destination": "SEA",
              "scheduled_departure_time_est": f"{i % 24:02d}:{(i // 24) % 60:02d}:00",
              "prices": {"economy": 100 + i, "business": 5000 + 3 * i}} for i in range(n)]
    answer = "Here are the flights:\n" + "\n".join(
        f"- {f['flight_number']} departs at {_twelve(f['scheduled_departure_time_est'])}, "
        f"economy ${f['prices']['economy']}" for f in found)
    call = ToolCall(id="c1", name="search_direct_flight",
                    arguments={"origin": "JFK", "destination": "SEA", "date": "2024-05-20"})
    turns = [Turn(index=0, role=Role.SYSTEM,
                  content="Policy. The current time is 2024-05-15 15:00:00 EST."),
             Turn(index=1, role=Role.USER, content="Flights from JFK to SEA on 2024-05-20."),
             Turn(index=2, role=Role.ASSISTANT, content="", tool_calls=[call]),
             Turn(index=3, role=Role.TOOL, content=json.dumps(found), tool_call_id="c1"),
             Turn(index=4, role=Role.ASSISTANT, content=answer)]
    return Conversation(id=f"listing-{n}", source="benchmark", domain="airline", turns=turns)
