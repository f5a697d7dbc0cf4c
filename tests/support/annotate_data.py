"""Hand-built test data: tiny conversations and the answers a strong model would give."""

from __future__ import annotations

from mtcabench.model import Conversation, Role, ToolCall, Turn


def tiny_conversation(cid: str, user_id: str, reservation: str, price: int) -> Conversation:
    """A short airline exchange: a value from the user, one from a tool, one summarised."""
    call1 = ToolCall(id=f"{cid}-c1", name="get_user_details", arguments={"user_id": user_id})
    call2 = ToolCall(id=f"{cid}-c2", name="get_reservation_details",
                     arguments={"reservation_id": reservation})
    turns = [
        Turn(index=0, role=Role.SYSTEM, content="You are an airline agent. Be brief."),
        Turn(index=1, role=Role.USER, content=f"Hi, my user id is {user_id}. What is my booking?"),
        Turn(index=2, role=Role.ASSISTANT, tool_calls=[call1]),
        Turn(index=3, role=Role.TOOL, tool_call_id=call1.id, name=call1.name,
             content=f'{{"name": "Mia Li", "reservations": ["{reservation}"]}}'),
        Turn(index=4, role=Role.ASSISTANT, content=f"Your reservation is {reservation}."),
        Turn(index=5, role=Role.USER, content="What did it cost?"),
        Turn(index=6, role=Role.ASSISTANT, tool_calls=[call2]),
        Turn(index=7, role=Role.TOOL, tool_call_id=call2.id, name=call2.name,
             content=f'{{"reservation_id": "{reservation}", "price": {price}}}'),
        Turn(index=8, role=Role.ASSISTANT,
             content=f"Reservation {reservation} cost ${price}."),
    ]
    return Conversation(id=cid, source="test", domain="airline", turns=turns)


TINY = [
    ("tiny/a", "mia_li_3668", "NO6JO3", 412),
    ("tiny/b", "omar_khan_102", "4WQ150", 151),
    ("tiny/c", "sara_doe_496", "VAAOXJ", 298),
]


def good_propose_table() -> dict:
    """Correct phase-1 answers for the tiny conversations (what a strong model would say)."""
    table = {}
    for _cid, user_id, reservation, price in TINY:
        table[(user_id, 4)] = [{
            "turn": 4, "quote": reservation, "dependency_type": "direct",
            "edges": [{"child": 4, "parent": 3, "evidence": reservation}],
            "rationale": "from the user details"}]
        table[(user_id, 8)] = [{
            "turn": 8, "quote": f"${price}", "dependency_type": "direct",
            "edges": [{"child": 8, "parent": 7, "evidence": str(price)}],
            "rationale": "from the reservation details"}]
    return table


def good_verify(turn: int, span: str) -> dict:
    """A verifier that confirms the one-hop edge to the tool result before the span's turn."""
    evidence = span.lstrip("$")
    return {"dependency_type": "direct",
            "edges": [{"child": turn, "parent": turn - 1, "evidence": evidence}],
            "primed_by": [], "confidence": 0.9, "rationale": "confirmed"}


