"""Reviewers' annotations back into provenance graphs, with every problem named.

A region (``paragraphlabels``) marks a turn as a graph node; the region labelled Target
marks the target turn; a relation from region A to region B is the edge ``A -> B`` (A
depends on B). Nothing is repaired: an annotation whose graph breaks a rule (a cycle, an
edge pointing forwards, a removed target...) is returned as :class:`Invalid` with its
reasons, and the caller leaves it out of the reviewed file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, TypeVar

from mtcabench.graph import check_graph
from mtcabench.io import ascii_int
from mtcabench.model import (
    ClaimKind,
    Conversation,
    DependencyType,
    Edge,
    EdgeKind,
    GraphEdit,
    ProvenanceGraph,
    Role,
    TargetSpan,
)
from mtcabench.review import _ui as ui

E = TypeVar("E", bound=Enum)


@dataclass(frozen=True)
class Problem:
    """One reason an annotation cannot be used: a short rule name and a sentence."""

    rule: str
    detail: str

    def __str__(self) -> str:
        return f"[{self.rule}] {self.detail}"


@dataclass
class ReadAnnotation:
    """What one annotation says: graph, type, verdict, comment and, for a claim, its kind
    (graph may be None; kind is None where none was chosen)."""

    graph: ProvenanceGraph | None
    dependency_type: DependencyType | None
    verdict: str | None  # model.Verdict value
    comment: str | None
    problems: list[Problem] = field(default_factory=list)
    claim_kind: ClaimKind | None = None


def _as_turn(x: Any) -> int | None:
    """A region's paragraph as a turn index: an integer, or its digits as Label Studio
    writes them ("3"); anything else (``1.9``, ``true``, ``"3a"``) is no turn, never rounded."""
    if isinstance(x, int) and not isinstance(x, bool):
        return x
    return ascii_int(x.strip()) if isinstance(x, str) else None


def _turn_of(value: dict[str, Any]) -> tuple[int | None, int | None]:
    return _as_turn(value.get("start")), _as_turn(value.get("end"))


def _edge_kind(child: int, parent: int, conversation: Conversation) -> EdgeKind:
    # The kind follows from the turns (a tool result linked to the turn that issued its
    # call), whatever label the reviewer gave the relation.
    turns = conversation.turns
    if 0 <= child < len(turns) and turns[child].role is Role.TOOL:
        try:
            if conversation.call_turn(child) == parent:
                return EdgeKind.STRUCTURAL
        except KeyError:
            pass
    return EdgeKind.CONTENT


def read_annotation(result: list[dict[str, Any]], conversation: Conversation) -> ReadAnnotation:
    """Turn one annotation's result list into a graph, without judging it against the rules."""
    problems: list[Problem] = []
    region_turn: dict[str, int] = {}
    targets: set[int] = set()
    relations: list[dict[str, Any]] = []
    choices: dict[str, list[str]] = {}
    comment: str | None = None

    for item in result:
        kind = item.get("type")
        if kind == "relation":
            relations.append(item)
        elif kind == "paragraphlabels" and item.get("from_name") == ui.NODES:
            value = item.get("value") or {}
            start, end = _turn_of(value)
            if start is None or end is None:
                given = (value.get("start"), value.get("end"))
                problems.append(Problem("region", f"region {item.get('id')} has no turn"
                                        if given == (None, None) else
                                        f"region {item.get('id')} marks turn {given[0]!r} to "
                                        f"{given[1]!r}, not a whole turn index"))
                continue
            labels = value.get("paragraphlabels") or []
            unknown = [x for x in labels if x not in ui.NODE_LABELS]
            if unknown:
                problems.append(Problem("unknown-label", (
                    f"region {item.get('id')} is labelled {', '.join(map(repr, unknown))}; "
                    f"the labels are {', '.join(ui.NODE_LABELS)}")))
                continue
            if start != end:
                problems.append(Problem(
                    "region-spans-turns",
                    f"region {item.get('id')} covers turns {start} to {end}; mark one turn per region",
                ))
                continue
            region_turn[str(item.get("id"))] = start
            if ui.TARGET in labels:
                targets.add(start)
        elif kind == "choices":
            # every choice of every item: two verdicts are two readings, never the last one
            choices.setdefault(str(item.get("from_name")), []).extend(
                (item.get("value") or {}).get("choices") or [])
        elif kind == "textarea" and item.get("from_name") == ui.COMMENT:
            texts = (item.get("value") or {}).get("text") or []
            comment = "\n".join(t for t in texts if t) or None

    verdict_choice = _one_choice(choices, ui.VERDICT, "verdict", problems)
    verdict = ui.VERDICTS.get(verdict_choice) if verdict_choice else None
    if verdict_choice and verdict is None:
        problems.append(Problem("verdict", f"unknown verdict {verdict_choice!r}"))
    dependency_type = _enum_choice(choices, ui.DEPENDENCY_TYPE, "dependency-type",
                                   DependencyType, problems)
    claim_kind = _enum_choice(choices, ui.CLAIM_KIND, "claim-kind", ClaimKind, problems)

    if not targets:
        problems.append(Problem("target-removed", "no region is labelled Target"))
        return ReadAnnotation(None, dependency_type, verdict, comment, problems, claim_kind)
    if len(targets) > 1:
        problems.append(Problem("several-targets",
                                f"regions labelled Target lie in turns {sorted(targets)}"))
        return ReadAnnotation(None, dependency_type, verdict, comment, problems, claim_kind)
    target = targets.pop()

    pairs: list[tuple[int, int]] = []
    for rel in relations:
        a, b = region_turn.get(str(rel.get("from_id"))), region_turn.get(str(rel.get("to_id")))
        if a is None or b is None:
            problems.append(Problem("dangling-relation",
                                    f"relation {rel.get('from_id')} -> {rel.get('to_id')} "
                                    "joins a region that is not a graph node"))
            continue
        direction = rel.get("direction", "right")
        if direction == "bi":
            problems.append(Problem("undirected-relation",
                                    f"relation between turns {a} and {b} points both ways"))
            continue
        pair = (a, b) if direction != "left" else (b, a)
        if pair not in pairs:  # two regions on one turn may repeat an edge: a set of pairs
            pairs.append(pair)
    edges = [Edge(child=c, parent=p, kind=_edge_kind(c, p, conversation)) for c, p in pairs]
    nodes = sorted(set(region_turn.values()))
    graph = ProvenanceGraph(target=target, nodes=nodes, edges=edges)
    return ReadAnnotation(graph, dependency_type, verdict, comment, problems, claim_kind)


def _one_choice(choices: dict[str, list[str]], name: str, rule: str,
                problems: list[Problem]) -> str | None:
    """The one value chosen for ``name``; several different ones are a problem under
    ``rule`` (the annotation has two readings, and picking one would be a guess) and None."""
    chosen = list(dict.fromkeys(choices.get(name) or []))
    if len(chosen) > 1:
        problems.append(Problem(rule, f"several {rule.replace('-', ' ')}s chosen: "
                                      f"{', '.join(map(repr, chosen))}; choose one"))
        return None
    return chosen[0] if chosen else None


def _enum_choice(choices: dict[str, list[str]], name: str, rule: str, enum: type[E],
                 problems: list[Problem]) -> E | None:
    """The one value chosen for ``name`` (:func:`_one_choice`) as a member of ``enum``; a
    value it does not know is a problem under ``rule`` (``unknown claim kind 'x'``) and None."""
    chosen = _one_choice(choices, name, rule, problems)
    if not chosen:
        return None
    try:
        return enum(chosen)
    except ValueError:
        problems.append(Problem(rule, f"unknown {rule.replace('-', ' ')} {chosen!r}"))
        return None


def graph_problems(
    read: ReadAnnotation, conversation: Conversation, span: TargetSpan, record: str
) -> list[Problem]:
    """Everything wrong with an annotation that is meant to be accepted."""
    problems = list(read.problems)
    if read.verdict is None and not any(p.rule == "verdict" for p in problems):
        problems.append(Problem("no-verdict", "no verdict chosen (accept, accept with edits, reject)"))
    if read.dependency_type is None and not any(p.rule == "dependency-type" for p in problems):
        problems.append(Problem("no-dependency-type", "no dependency type chosen"))
    if read.graph is not None:
        problems += [Problem(v.rule, v.detail)
                     for v in check_graph(read.graph, conversation, span, record=record)]
    return problems


def graph_edit(
    before: ProvenanceGraph, before_type: DependencyType | None,
    after: ProvenanceGraph, after_type: DependencyType,
) -> GraphEdit | None:
    """What changed between the candidate and the reviewed graph; None when nothing did."""
    b_pairs, a_pairs = before.pairs(), after.pairs()
    b_nodes, a_nodes = set(before.nodes), set(after.nodes)
    edit = GraphEdit(
        edges_added=sorted(a_pairs - b_pairs),
        edges_removed=sorted(b_pairs - a_pairs),
        nodes_added=sorted(a_nodes - b_nodes),
        nodes_removed=sorted(b_nodes - a_nodes),
        type_changed=(
            (before_type.value if before_type else "none", after_type.value)
            if before_type is not after_type else None
        ),
    )
    changed = (edit.edges_added or edit.edges_removed or edit.nodes_added or edit.nodes_removed
               or edit.type_changed)
    return edit if changed else None
