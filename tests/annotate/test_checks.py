"""Deterministic checks on hand-built model answers: offsets, quotes, evidence, graph rules."""

from __future__ import annotations

import json

import pytest
from tests.support.annotate_data import tiny_conversation

from mtcabench.annotate.phases import candidate_from_answer, proposals_from_answer
from mtcabench.annotate.phases.quotes import find_quote, normalise
from mtcabench.graph import check_graph
from mtcabench.model import Annotator, DependencyType, EdgeKind

ANN = Annotator(name="llm", model="m", prompt_version="propose-v1", prompt_hash="h")
VER = Annotator(name="llm", model="m", prompt_version="verify-v1", prompt_hash="h2")


@pytest.fixture
def conv():
    return tiny_conversation("t/a", "mia_li_3668", "NO6JO3", 412)


def propose(conv, spans, targets=(4, 8), raw=None, finish="stop"):
    raw = raw if raw is not None else json.dumps({"spans": spans})
    return proposals_from_answer(conv, "t/a#propose:4-8", targets, raw, finish, ANN)


def span(turn=4, quote="NO6JO3", dtype="direct", edges=None, **extra):
    edges = [{"child": 4, "parent": 3, "evidence": "NO6JO3"}] if edges is None else edges
    return {"turn": turn, "quote": quote, "dependency_type": dtype, "edges": edges,
            "rationale": "r", **extra}


def reasons(record):
    return {r.reason for r in record.rejections}


# ---------------------------------------------------------------- quotes


def test_find_quote_exact_and_first_occurrence():
    assert find_quote("a NO6JO3 b NO6JO3", "NO6JO3") == (2, 8)
    assert find_quote("abc", "") is None and find_quote("abc", "   ") is None
    assert find_quote("abc", "abd") is None


@pytest.mark.parametrize("text,quote,expected", [
    ("Price:  $412\n total", "price: $412 total", "Price:  $412\n total"),  # case + spaces
    ("it\u2019s booked", "it's booked", "it\u2019s booked"),  # curly apostrophe
    ("\u201cHAT136\u201d", '"HAT136"', "\u201cHAT136\u201d"),  # curly quotes
    ("ＮＯ６ＪＯ３ ok", "NO6JO3", "ＮＯ６ＪＯ３"),  # full-width forms (NFKC)
    ("May 20 \u2013 May 22", "May 20 - May 22", "May 20 \u2013 May 22"),  # en dash
    ("a\u00a0b", "a b", "a\u00a0b"),  # non-breaking space
])
def test_find_quote_normalisation_maps_back_to_original(text, quote, expected):
    start, end = find_quote(text, quote)
    assert text[start:end] == expected


def test_normalisation_does_not_drop_punctuation_or_markdown():
    # Only the stated normalisation: a quote without the markdown stars is not found.
    assert find_quote("**Flight HAT069**", "Flight HAT069") == (2, 15)
    assert find_quote("HAT-069", "HAT069") is None
    assert find_quote('{"price": 412}', "price: 412") is None
    norm, where = normalise("A\u2019  B")
    assert norm == "a' b" and len(where) == len(norm)


# ---------------------------------------------------------------- propose


def test_valid_answer_gives_ok_proposal_with_computed_offsets(conv):
    # The model's own offsets (wrong here) are ignored: ours come from the quote.
    [p] = propose(conv, [span(start=0, end=3)])
    assert p.status == "ok" and p.rejections == []
    text = conv.turns[4].text
    assert (p.span.start, p.span.end) == (text.index("NO6JO3"), text.index("NO6JO3") + 6)
    assert p.id == f"t/a#4:{p.span.start}-{p.span.end}"
    # Structural edge from the tool result to its call turn was added by code.
    assert {(e.child, e.parent, e.kind) for e in p.graph.edges} == {
        (4, 3, EdgeKind.CONTENT), (3, 2, EdgeKind.STRUCTURAL)}
    ev = p.graph.edges[0].evidence
    assert conv.turns[3].text[ev.start:ev.end] == ev.quote == "NO6JO3"
    assert check_graph(p.graph, conv, p.span) == []
    assert p.annotator.prompt_version == "propose-v1" and p.raw_output is None


def test_quote_not_in_turn_is_rejected_with_raw_output(conv):
    [p] = propose(conv, [span(quote="XYZ999")])
    assert p.status == "rejected" and reasons(p) == {"quote-not-found"}
    assert p.raw_output and "XYZ999" in p.raw_output
    assert p.id == "t/a#propose:4-8/rejected/0" and p.span is None


def test_span_outside_target_turns_is_rejected(conv):
    [p] = propose(conv, [span(turn=1, quote="mia_li_3668")])
    assert reasons(p) == {"span-turn"}


def test_forward_edge_and_cycle_are_rejected(conv):
    [fwd] = propose(conv, [span(edges=[{"child": 4, "parent": 5, "evidence": "cost"}])])
    assert "graph:edge-backwards" in reasons(fwd) and fwd.status == "rejected"
    [cyc] = propose(conv, [span(turn=8, quote="$412", edges=[
        {"child": 8, "parent": 4, "evidence": "NO6JO3"},
        {"child": 4, "parent": 8, "evidence": "412"}])])
    assert {"graph:acyclic", "graph:edge-backwards"} <= reasons(cyc)


def test_evidence_not_in_parent_and_missing_evidence(conv):
    [p] = propose(conv, [span(edges=[{"child": 4, "parent": 1, "evidence": "NO6JO3"}])])
    assert reasons(p) == {"evidence-not-found"}
    [q] = propose(conv, [span(edges=[{"child": 4, "parent": 3, "evidence": ""}])])
    assert reasons(q) == {"evidence-missing"}


def test_edge_to_missing_turn_and_no_source(conv):
    [p] = propose(conv, [span(edges=[{"child": 4, "parent": 99, "evidence": "x"}])])
    assert {"evidence-not-found", "graph:node-exists"} <= reasons(p)
    [q] = propose(conv, [span(edges=[])])
    assert reasons(q) == {"no-source"}
    # A hallucination may have no source and no evidence.
    [h] = propose(conv, [span(dtype="hallucination", edges=[])])
    assert h.status == "ok" and h.dependency_type is DependencyType.HALLUCINATION


def test_model_edges_out_of_tool_turns_are_replaced_by_the_structural_edge(conv):
    [p] = propose(conv, [span(edges=[{"child": 4, "parent": 3, "evidence": "NO6JO3"},
                                     {"child": 3, "parent": 1, "evidence": "mia_li_3668"}])])
    assert p.status == "ok"
    assert (3, 1) not in p.graph.pairs() and (3, 2) in p.graph.pairs()


def test_chain_through_the_call_turn_is_kept(conv):
    [p] = propose(conv, [span(edges=[{"child": 4, "parent": 3, "evidence": "NO6JO3"},
                                     {"child": 2, "parent": 1, "evidence": "mia_li_3668"}])])
    assert p.status == "ok" and p.graph.pairs() == {(4, 3), (3, 2), (2, 1)}


def test_duplicate_span_and_several_spans(conv):
    ps = propose(conv, [span(), span(), span(turn=8, quote="$412",
                                             edges=[{"child": 8, "parent": 7, "evidence": "412"}])])
    assert [p.status for p in ps] == ["ok", "rejected", "ok"]
    assert reasons(ps[1]) == {"duplicate-span"}
    assert ps[2].span.text == "$412"


@pytest.mark.parametrize("raw,finish,reason", [
    ('{"spans": [{"turn": 4, "quote": "NO6', "length", "truncated"),
    ("not json at all", "stop", "invalid-json"),
    ('{"spans": [{"turn": "four"}]}', "stop", "schema"),
    ('{"answer": 1}', "stop", "schema"),
])
def test_unparseable_answers_are_kept_as_one_rejected_record(conv, raw, finish, reason):
    [p] = propose(conv, [], raw=raw, finish=finish)
    assert p.status == "rejected" and reasons(p) == {reason}
    assert p.raw_output == raw and p.id == "t/a#propose:4-8/rejected"


def test_empty_answer_gives_no_record(conv):
    assert propose(conv, []) == []


# ---------------------------------------------------------------- verify


@pytest.fixture
def ok_proposal(conv):
    [p] = propose(conv, [span(dtype="chained")])
    return p


def verify(conv, proposal, answer, finish="stop"):
    raw = answer if isinstance(answer, str) else json.dumps(answer)
    return candidate_from_answer(conv, proposal, raw, finish, VER)


def test_verify_confirms_and_corrects_type_by_shape(conv, ok_proposal):
    c = verify(conv, ok_proposal, {"dependency_type": "chained", "primed_by": [],
                                    "edges": [{"child": 4, "parent": 3, "evidence": "NO6JO3"}],
                                    "confidence": 0.8, "rationale": "ok"})
    assert c.status == "ok" and c.id == ok_proposal.id
    assert c.dependency_type is DependencyType.DIRECT  # one hop to a tool result
    assert any("chained -> direct" in x for x in c.changes)
    assert c.proposal_annotator.prompt_version == "propose-v1"
    assert c.annotator.prompt_version == "verify-v1" and c.confidence == 0.8


def test_verify_adds_and_removes_edges_and_lists_changes(conv, ok_proposal):
    c = verify(conv, ok_proposal, {"dependency_type": "multi-source", "primed_by": [],
                                    "edges": [{"child": 4, "parent": 3, "evidence": "NO6JO3"},
                                              {"child": 4, "parent": 1, "evidence": "mia_li_3668"}],
                                    "confidence": 0.6, "rationale": "two sources"})
    assert c.status == "ok" and c.dependency_type is DependencyType.MULTI_SOURCE
    assert "added edge 4->1" in c.changes


def test_verify_hallucination_links_priming_turns(conv, ok_proposal):
    c = verify(conv, ok_proposal, {"dependency_type": "hallucination", "edges": [],
                                    "primed_by": [1], "confidence": 0.5, "rationale": "wrong"})
    assert c.status == "ok" and c.graph.pairs() == {(4, 1)}
    assert c.dependency_type is DependencyType.HALLUCINATION


def test_verify_rejections_keep_reason_and_raw(conv, ok_proposal):
    bad = verify(conv, ok_proposal, {"dependency_type": "direct", "primed_by": [],
                                      "edges": [{"child": 4, "parent": 6, "evidence": "nope"}],
                                      "confidence": 0.9, "rationale": "x"})
    assert bad.status == "rejected" and bad.id == ok_proposal.id + "/rejected"
    assert {"evidence-not-found"} <= reasons(bad) and bad.raw_output
    broken = verify(conv, ok_proposal, '{"dependency_type": "direct", "edges": [], "conf',
                    finish="length")
    assert reasons(broken) == {"truncated"} and broken.span == ok_proposal.span
    out_of_range = verify(conv, ok_proposal, {"dependency_type": "direct", "edges": [],
                                               "primed_by": [], "confidence": 1.5,
                                               "rationale": "x"})
    assert reasons(out_of_range) == {"schema"}


@pytest.mark.parametrize("form_text, form_quote", [("NFC", "NFD"), ("NFD", "NFC"),
                                                   ("NFD", "NFD")])
def test_a_quote_in_another_unicode_form_is_found_at_the_text_own_offsets(form_text, form_quote):
    import unicodedata

    text = unicodedata.normalize(form_text, "Réservation à Zürich confirmée, merci.")
    quote = unicodedata.normalize(form_quote, "à Zürich confirmée")
    start, end = find_quote(text, quote)
    assert unicodedata.normalize("NFC", text[start:end]) == unicodedata.normalize("NFC", quote)
    assert text[end:].startswith(",")  # the last é's combining accent is inside the span
