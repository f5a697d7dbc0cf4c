"""Counterfactual hallucinations (``annotate counterfactual``): an answer's value replaced by
the value of the same field that its tool result gives for another entity."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from mtcabench.lineage import conversation_counterfactuals, propose_counterfactuals
from mtcabench.lineage import _counterfactual
from mtcabench.lineage._counterfactual import field_name, written_like
from mtcabench.graph import check_graph
from mtcabench.cli import app
from mtcabench.errors import ExitCode, InputError
from mtcabench.io import dump_record, read_records, write_records
from mtcabench.model import Candidate, Conversation, Role, SpanOrigin, ToolCall, Turn
from tests.support.long_conversations import flight_listing


def build(*specs, cid="t/2") -> Conversation:
    """Turns from short specs (those of test_rules_v2.py): ("s"|"u"|"a", text),
    ("call", [(id, name, args)], text), ("tool", call id, result)."""
    turns = []
    for i, spec in enumerate(specs):
        if spec[0] in ("s", "u", "a"):
            role = {"s": Role.SYSTEM, "u": Role.USER, "a": Role.ASSISTANT}[spec[0]]
            turns.append(Turn(index=i, role=role, content=spec[1]))
        elif spec[0] == "call":
            calls = [ToolCall(id=c, name=n, arguments=a) for c, n, a in spec[1]]
            turns.append(Turn(index=i, role=Role.ASSISTANT, content=spec[2] if len(spec) > 2
                              else "", tool_calls=calls))
        else:
            result = spec[2] if isinstance(spec[2], str) else json.dumps(spec[2])
            turns.append(Turn(index=i, role=Role.TOOL, content=result, tool_call_id=spec[1]))
    return Conversation(id=cid, source="test", domain="airline", turns=turns)


def edges(cand):
    return {(e.child, e.parent, e.kind.value[0]) for e in cand.graph.edges}


POLICY = ("s", "Policy. The current time is 2024-05-15 15:00:00 EST.")

FLIGHTS = [
    {"flight_number": "HAT069", "origin": "JFK", "destination": "SEA",
     "scheduled_departure_time_est": "06:00:00", "prices": {"economy": 121, "business": 239}},
    {"flight_number": "HAT083", "origin": "JFK", "destination": "SEA",
     "scheduled_departure_time_est": "19:00:00", "prices": {"economy": 1348, "business": 400}},
]
ANSWER = "The cheapest is flight HAT069, departing at 06:00 AM, economy $121."


def search_conv():
    return build(POLICY, ("u", "Flights from JFK to SEA on 2024-05-20, please."),
                 ("call", [("c1", "search_direct_flight", {"origin": "JFK", "destination": "SEA",
                                                           "date": "2024-05-20"})]),
                 ("tool", "c1", FLIGHTS),
                 ("a", ANSWER),
                 ("u", "Book it."), cid="t/cf")


def test_each_value_is_replaced_by_the_other_flights_and_primed_by_the_search():
    conv = search_conv()
    made = conversation_counterfactuals(conv, per_conversation=5)
    got = {c.counterfactual.field: (c.counterfactual.original, c.span.text) for _, c in made}
    assert got == {"flight_number": ("HAT069", "HAT083"),
                   "scheduled_departure_time_est": ("06:00 AM", "07:00 PM"),
                   "prices.economy": ("121", "1348")}
    for edited, cand in made:
        assert cand.origin is SpanOrigin.COUNTERFACTUAL
        assert cand.dependency_type.value == "hallucination"
        assert cand.annotator.name == "counterfactual"
        start = ANSWER.index(cand.counterfactual.original)
        assert cand.id == f"t/cf/counterfactual-4-{start}#4:{start}-{cand.span.end}"
        # the edited conversation: the real one up to the answer, one value replaced
        assert edited.id == cand.conversation_id and len(edited.turns) == 5
        assert edited.metadata["counterfactual_of"] == "t/cf"
        assert edited.turns[:4] == conv.turns[:4]
        text = edited.turns[4].content
        assert text[cand.span.start:cand.span.end] == cand.span.text
        assert text.replace(cand.span.text, cand.counterfactual.original, 1) == ANSWER
        # the gold graph: the search result that showed the replacement, its call, the user
        assert edges(cand) == {(4, 3, "c"), (3, 2, "s"), (2, 1, "c")}
        assert check_graph(cand.graph, edited, cand.span, record=cand.id) == []
        e = cand.counterfactual
        assert e.source_turn == e.entity_turn == 3
        assert edited.turns[3].text[e.source_start:e.source_end] == e.source_quote
        assert conv.turns[3].text[e.original_start:].startswith(
            {"06:00 AM": "06:00:00"}.get(e.original, e.original))


def test_the_draw_is_seeded_per_conversation_and_bounded():
    conv = search_conv()
    one = conversation_counterfactuals(conv, per_conversation=1, seed=3)
    assert len(one) == 1
    assert [c.id for _, c in conversation_counterfactuals(conv, per_conversation=1, seed=3)] \
        == [c.id for _, c in one]
    assert len(list(propose_counterfactuals([conv, conv.model_copy(update={"id": "t/cf2"})],
                                            per_conversation=2))) == 4


def test_no_edit_without_another_entity_of_the_same_field():
    conv = build(POLICY, ("u", "My id is ab_123."),
                 ("call", [("c1", "get_user_details", {"user_id": "ab_123"})]),
                 ("tool", "c1", {"user_id": "ab_123", "membership": "gold", "dob": "1990-04-05"}),
                 ("a", "Your birth date is 1990-04-05."))
    assert conversation_counterfactuals(conv) == []


def test_a_real_records_origin_is_not_written_and_a_counterfactual_round_trips():
    conv = search_conv()
    _, cand = conversation_counterfactuals(conv, per_conversation=1)[0]
    real = cand.model_copy(update={"origin": SpanOrigin.REAL, "counterfactual": None})
    assert "origin" not in dump_record(real) and "counterfactual" not in dump_record(real)
    line = dump_record(cand)
    assert line["origin"] == "counterfactual" and line["counterfactual"]["field"]
    assert Candidate.model_validate(line) == cand


def test_values_are_written_the_way_the_answer_wrote_the_original():
    assert written_like("1,348", 1348, 12531) == "12,531"
    assert written_like("121.00", 121, 99) == "99.00"
    assert written_like("121", 121, 99.5) is None  # more decimals than the answer writes
    assert written_like("May 20, 2024", "2024-05-20", "2024-05-03") == "May 3, 2024"
    assert written_like("May 20th", "2024-05-20", "2024-05-22") == "May 22nd"
    assert written_like("7:00 PM", "19:00:00", "06:30:00") == "6:30 AM"
    assert written_like("Gold", "gold", "silver") is None  # case differs: not reproduced
    assert field_name(("reservations", 2)) == "reservations[]"
    assert field_name((0, "prices", "economy")) == "prices.economy"
    assert field_name(("payment_methods", "credit_card_1", "last_four")) == "last_four"


def test_the_command_writes_candidates_and_their_conversations(tmp_path):
    convs = tmp_path / "conversations.jsonl"
    write_records(convs, [search_conv()])
    out, edited = tmp_path / "cf.jsonl", tmp_path / "cf-conversations.jsonl"
    res = CliRunner().invoke(app, ["annotate", "counterfactual", "--in", str(convs), "--out",
                                   str(out), "--conversations-out", str(edited),
                                   "--per-conversation", "2"])
    assert res.exit_code == 0, res.output
    cands = list(read_records(out, Candidate))
    made = list(read_records(edited, Conversation))
    assert len(cands) == len(made) == 2
    assert [c.conversation_id for c in cands] == [c.id for c in made]
    assert "counterfactual-v1: 2 spans from 1 of 1 conversations" in res.output
    # one file for both is refused before anything is written
    res = CliRunner().invoke(app, ["annotate", "counterfactual", "--in", str(convs), "--out",
                                   str(tmp_path / "x.jsonl"), "--conversations-out",
                                   str(tmp_path / "x.jsonl")])
    assert res.exit_code == ExitCode.USAGE and not (tmp_path / "x.jsonl").exists()


def test_a_long_listing_checks_only_the_edits_it_draws(monkeypatch):
    """An answer listing 100 flights holds about 30,000 possible edits: the draw checks those
    it draws (checking them all first made 300 flights take 46 s), and still spreads them."""
    checked = []
    check = _counterfactual._edit
    monkeypatch.setattr(_counterfactual, "_edit", lambda *a: checked.append(a) or check(*a))
    conv = flight_listing(100)
    made = conversation_counterfactuals(conv, per_conversation=3, seed=1)
    assert 3 <= len(checked) < 100
    assert len({c.counterfactual.field for _, c in made}) == 3  # a field not yet drawn first
    for edited, cand in made:
        assert check_graph(cand.graph, edited, cand.span, record=cand.id) == []
        assert edited.turns[4].content[cand.span.start:cand.span.end] == cand.span.text
    again = conversation_counterfactuals(conv, per_conversation=3, seed=1)
    assert [c.id for _, c in again] == [c.id for _, c in made]
    # every value of the answer is a value that may be drawn; none is edited twice
    many = conversation_counterfactuals(conv, per_conversation=40, seed=2)
    assert len(many) == 40 and len({(c.span.turn, c.span.start) for _, c in many}) == 40


def test_a_bad_output_path_is_refused_before_any_file_is_replaced(tmp_path):
    """--out in a folder that does not exist: the file at --conversations-out was replaced
    first (the user's file gone, edits without their candidates left)."""
    convs = tmp_path / "conversations.jsonl"
    write_records(convs, [search_conv()])
    edited = tmp_path / "cf-conversations.jsonl"
    edited.write_text("the user's own file\n", encoding="utf-8")
    res = CliRunner().invoke(app, ["annotate", "counterfactual", "--in", str(convs), "--out",
                                   str(tmp_path / "missing" / "cf.jsonl"),
                                   "--conversations-out", str(edited)])
    assert res.exit_code == ExitCode.BAD_INPUT, res.output
    assert "folder" in res.output and "does not exist" in res.output
    assert edited.read_text(encoding="utf-8") == "the user's own file\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cf-conversations.jsonl",
                                                         "conversations.jsonl"]


def test_its_own_output_is_refused_as_real_conversations(tmp_path):
    convs = tmp_path / "conversations.jsonl"
    write_records(convs, [search_conv()])
    out, edited = tmp_path / "cf.jsonl", tmp_path / "cf-conversations.jsonl"
    args = ["annotate", "counterfactual", "--in", str(convs), "--out", str(out),
            "--conversations-out", str(edited)]
    assert CliRunner().invoke(app, args).exit_code == 0
    res = CliRunner().invoke(app, ["annotate", "counterfactual", "--in", str(edited), "--out",
                                   str(tmp_path / "cf2.jsonl"), "--conversations-out",
                                   str(tmp_path / "cf2-conversations.jsonl")])
    assert res.exit_code == ExitCode.BAD_INPUT, res.output
    lines = [x for x in res.output.splitlines() if x.strip()]
    assert len(lines) == 1 and str(edited.name) in lines[0], res.output
    assert "(record t/cf/counterfactual-4-" in lines[0] and "counterfactual edit of 't/cf'" \
        in lines[0]
    assert not (tmp_path / "cf2.jsonl").exists()
    with pytest.raises(InputError, match="counterfactual edit of"):
        list(propose_counterfactuals(read_records(edited, Conversation)))
