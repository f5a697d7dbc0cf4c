"""Combining the lineage and LLM annotators: one candidate per span, the other graph kept."""

from __future__ import annotations

import pytest

from mtcabench.annotate import annotate_run, combine_candidates
from mtcabench.graph import check_graph
from mtcabench.io import load_conversations, read_records
from mtcabench.model import (
    Annotator,
    Candidate,
    DependencyType,
    Edge,
    EdgeKind,
    ProvenanceGraph,
    Rejection,
    TargetSpan,
    parse_span_id,
)

LLM = Annotator(name="llm", model="m")
LIN = Annotator(name="lineage", rules_version="lineage-v1")


def cand(annotator, sid, pairs, turn=8, status="ok"):
    edges = [Edge(child=c, parent=p, kind=EdgeKind.STRUCTURAL if (c, p) == (7, 6) else
                  EdgeKind.CONTENT) for c, p in pairs]
    nodes = sorted({turn} | {x for pr in pairs for x in pr})
    _, _, start, end = parse_span_id(sid.removesuffix("/rejected"))  # a rejected record's id
    return Candidate(id=sid, conversation_id="c", annotator=annotator, status=status,
                     span=TargetSpan(turn=turn, start=start, end=end, text="x" * 3),
                     dependency_type=DependencyType.DIRECT,
                     graph=ProvenanceGraph(target=turn, nodes=nodes, edges=edges),
                     rejections=[Rejection(reason="schema")] if status != "ok" else [])


def test_both_annotators_keep_lineage_main_and_llm_alternative():
    llm = [cand(LLM, "c#8:0-3", [(8, 7), (7, 6)]), cand(LLM, "c#8:5-8", [(8, 7), (7, 6)]),
           cand(LLM, "c#8:9-12/rejected", [(8, 1)], status="rejected")]
    lin = [cand(LIN, "c#8:0-3", [(8, 7), (7, 6), (6, 1)]), cand(LIN, "c#8:20-23", [(8, 1)])]
    out = combine_candidates(llm, lin)
    assert [c.id for c in out] == ["c#8:0-3", "c#8:5-8", "c#8:9-12/rejected", "c#8:20-23"]
    both = out[0]
    assert both.annotator.name == "lineage" and both.graph.pairs() == {(8, 7), (7, 6), (6, 1)}
    [alt] = both.alternatives
    assert alt.annotator.name == "llm" and alt.graph.pairs() == {(8, 7), (7, 6)}
    assert alt.edge_f1 == pytest.approx(0.8)  # P 1, R 2/3
    assert out[1].annotator.name == "llm" and not out[1].alternatives
    assert out[2].status == "rejected" and out[3].annotator.name == "lineage"


def test_main_llm_flips_the_choice_and_bad_choice_is_refused():
    llm = [cand(LLM, "c#8:0-3", [(8, 7), (7, 6)])]
    lin = [cand(LIN, "c#8:0-3", [(8, 1)])]
    [c] = combine_candidates(llm, lin, main="llm")
    assert c.annotator.name == "llm" and c.alternatives[0].annotator.name == "lineage"
    assert c.alternatives[0].edge_f1 == 0.0
    with pytest.raises(ValueError):
        combine_candidates(llm, lin, main="both")


def test_run_combines_the_real_lineage_annotator_with_llm_answers(fake_openai, tiny_path,
                                                                   tmp_path):
    out = tmp_path / "out"
    summary = annotate_run(tiny_path, out, base_url=fake_openai.base_url, model="fake",
                           progress=False)
    assert summary.annotators == ("lineage", "llm")
    cands = {c.id: c for c in read_records(out / "candidates.jsonl", Candidate)}
    convs = load_conversations(tiny_path)
    # The reservation id at turn 4: both annotators found the same span.
    both = cands["tiny/a#4:20-26"]
    assert both.annotator.name == "lineage" and both.alternatives[0].annotator.name == "llm"
    assert both.alternatives[0].edge_f1 == pytest.approx(0.8)
    # "$412" (LLM) and "412" (lineage) are different spans: each kept on its own.
    assert cands["tiny/a#8:24-28"].annotator.name == "llm"
    assert cands["tiny/a#8:25-28"].annotator.name == "lineage"
    assert summary.both_annotators == 3
    assert summary.candidates_by_annotator == {"lineage": 9, "llm": 3}
    for c in cands.values():
        assert c.status == "ok"
        assert check_graph(c.graph, convs[c.conversation_id], c.span, record=c.id) == []


def test_lineage_only_needs_no_endpoint(tiny_path, tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    summary = annotate_run(tiny_path, tmp_path / "o", annotators="lineage", progress=False)
    assert summary.endpoint is None and summary.candidates.ok == 9
    assert not (tmp_path / "o" / "proposals.jsonl").exists()
    assert not (tmp_path / "o" / "annotate-cache.sqlite").exists()
