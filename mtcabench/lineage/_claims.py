"""Membership claims (rules ``lineage-v2``): the user's tier stated against the profile.

In TauBench's airline runs the typical hallucination is not a made-up number but a category:
the user says "As a Gold member, ..." and the agent repeats it ("Since you are a Gold member,
I can offer you a certificate") although the profile it fetched says ``"membership":
"regular"``. Such a claim is proposed as a hallucination when it is decidable exactly:

1. the answer asserts the user's tier: "you are a Gold member", "as a (valued) Gold member",
   "your Gold membership"; a sentence with a conditional (if, would, whether, could, might,
   unless) is a hypothesis, not a claim (counted as ``hypothetical-claim``);
2. an earlier tool result states the user's ``membership`` (the latest one is the relevant
   one) and no earlier tool result gives the tier the answer states;
3. the two tiers differ.

The span is the tier word. The graph holds what primed it: the contradicted profile (quoting
its tier), its call and the call's sources, and the latest earlier user turn that claimed the
tier ("I'm a Gold member"), if any; when that claim was the agent's own earlier answer, the
chain continues through it.
"""

from __future__ import annotations

import re

from mtcabench.lineage._tracing import Covered, ProposedSpan, Tracer
from mtcabench.lineage._values import Value
from mtcabench.model import DependencyType, Edge, Evidence, Role, TargetSpan

TIERS = ("regular", "silver", "gold")
_TIER = "|".join(TIERS)
#: The answer asserting the user's tier.
_CLAIM = re.compile(
    rf"(?i)\b(?:you are|you're|as) an? (?:valued |loyal |esteemed )?({_TIER})(?:[- ]tier)? member\b"
    rf"|\byour ({_TIER}) (?:membership|member status|status|tier)\b")
#: A tier named in a membership context, in a user's or an earlier answer's sentence.
_MENTION = re.compile(rf"(?i)\b({_TIER})\b(?=[\w\s-]{{0,12}}\b(?:member|membership|tier|status)\b)")
_HYPOTHETICAL = re.compile(r"(?i)\b(?:if|would|whether|could|might|unless)\b")
_SENTENCE = re.compile(r"[^.!?\n]*[.!?\n]?")
_PROFILE_TIER = re.compile(rf'(?i)"membership":\s*"({_TIER})"')


def membership_spans(tracer: Tracer, c: int, covered: Covered
                     ) -> list[ProposedSpan]:
    """Hallucinated membership tiers in answer turn ``c``."""
    content = tracer.turns[c].content
    out: list[ProposedSpan] = []
    asserted = _claims_in(content)
    if tracer.rules.claim_context:
        asserted = [a for a in asserted if not not_a_claim(content, a[0])]
    hypotheses = sum(1 for _ in _CLAIM.finditer(content)) - len(asserted)
    tracer.summary.skipped["hypothetical-claim"] += hypotheses
    for start, end, claimed in asserted:
        if covered.overlaps(start, end):
            continue
        stated = _profile_tiers(tracer, c)
        if not stated or claimed in {tier for _, tier in stated}:
            continue  # nothing to check it against, or the profile says so: no contradiction
        profile, tier = stated[-1]
        made = _hallucination(tracer, c, start, end, claimed, profile, tier)
        if made is not None:
            out.append(made)
            covered.add(start, end)
    return out


#: A line break, also as written inside a turn that is a JSON object (``{"message": "...\n"}``).
_LINE_BREAK = re.compile(r"\n|\\n")
#: A list item: "- ", "* ", "• ", "1. ", "2) ".
_LIST_ITEM = re.compile(r"\s*(?:[-*•]|\d{1,2}[.)])\s")
#: A list's heading that makes its items conditions, not facts.
_CONDITION_HEAD = re.compile(
    r"(?i)\b(?:if|unless|conditions?|criteria|requirements?|one of|any of)\b")
#: The user's claim, reported ("you've indicated you're a Gold member"); the agent's own
#: "As I said, ..." is its claim.
_REPORTED = re.compile(r"(?i)\b(?:you(?:['’]ve| have)?|the user|the customer)\s+(?:\w+\s+)?"
                       r"(?:indicated|said|mentioned|claimed|stated|told)\b")
#: The rule as the subject ("our free cancellation window is within 24 hours of booking").
_RULE_SUBJECT = re.compile(r"(?i)\b(?:window|policy|rule)\s+(?:is|are)\s+$")


def not_a_claim(text: str, pos: int) -> bool:
    """Whether what stands at ``pos`` is, by its context, no claim of the answer (rules
    ``lineage-v4``): an item of a list whose heading states conditions ("... can only be
    cancelled if one of the following is met:\n1. The booking was made within the last 24
    hours"), a claim the sentence reports ("you've indicated you're a Gold member"), or the
    rule stated ("our window is within 24 hours of booking")."""
    breaks = [m for m in _LINE_BREAK.finditer(text)]
    starts = [0] + [m.end() for m in breaks]
    ends = [m.start() for m in breaks] + [len(text)]
    line = max(i for i, s in enumerate(starts) if s <= pos)
    if _LIST_ITEM.match(text, starts[line]):
        for i in range(line - 1, -1, -1):
            head = text[starts[i]:ends[i]]
            if not head.strip() or _LIST_ITEM.match(head):
                continue
            if head.strip().rstrip("*").rstrip().endswith(":") and _CONDITION_HEAD.search(head):
                return True
            break
    sentence_start = max([starts[line]] + [text.rfind(x, starts[line], pos) + 1 for x in ".!?"])
    before = text[sentence_start:pos]
    return bool(_REPORTED.search(before) or _RULE_SUBJECT.search(before))


def _sentence_at(text: str, pos: int) -> str:
    for m in _SENTENCE.finditer(text):
        if m.start() <= pos < max(m.end(), m.start() + 1):
            return m.group()
    return ""


def _profile_tiers(tracer: Tracer, c: int) -> list[tuple[int, str]]:
    """(tool turn, tier) for every earlier tool result stating ``membership``, in order."""
    out = []
    for t in range(c):
        turn = tracer.turns[t]
        if turn.role is not Role.TOOL:
            continue
        is_json, data = tracer.tool_data(t)
        if not is_json:
            continue
        if isinstance(data, dict) and str(data.get("membership", "")).lower() in TIERS:
            out.append((t, data["membership"].lower()))
    return out


def _claims_in(text: str) -> list[tuple[int, int, str]]:
    """(start, end, tier) of the asserted tiers of an answer's text (not hypotheses)."""
    out = []
    for m in _CLAIM.finditer(text):
        group = 1 if m.group(1) else 2
        if not _HYPOTHETICAL.search(_sentence_at(text, m.start(group))):
            out.append((*m.span(group), m.group(group).lower()))
    return out


def _latest_claim(tracer: Tracer, c: int, tier: str) -> tuple[int, int, int] | None:
    """(turn, start, end) of the latest earlier claim of ``tier`` that the answer repeated: a
    user naming it as their membership, or the agent's own earlier assertion of it."""
    for t in range(c - 1, -1, -1):
        turn = tracer.turns[t]
        if turn.role is Role.USER:
            found = [(*m.span(1), m.group(1).lower()) for m in _MENTION.finditer(turn.content)]
        elif turn.role is Role.ASSISTANT:
            found = _claims_in(turn.content)
        else:
            continue
        for s, e, claimed in found:
            if claimed == tier:
                return t, s, e
    return None


def _hallucination(tracer: Tracer, c: int, start: int, end: int, claimed: str, profile: int,
                   tier: str) -> ProposedSpan | None:
    content = tracer.turns[c].content
    pos = _PROFILE_TIER.search(tracer.turns[profile].text)
    if pos is None:  # the tier is escaped in the raw text: nothing exact to quote
        return None
    edges, unsourced = tracer.trace(c, [(profile, "")])
    if edges is None:  # larger than MAX_GRAPH_TURNS (counted by trace)
        return None
    tracer.count_unsourced(unsourced)
    edges[(c, profile)] = Edge(child=c, parent=profile, evidence=Evidence(
        quote=pos.group(1), start=pos.start(1), end=pos.end(1)))
    primers = []
    child = c
    while (claim := _latest_claim(tracer, child, claimed)) is not None:
        t, s, e = claim
        edges[(child, t)] = Edge(child=child, parent=t, evidence=Evidence(
            quote=tracer.turns[t].text[s:e], start=s, end=e))
        primers.append(t)
        if tracer.turns[t].role is not Role.ASSISTANT:
            break
        child = t  # the agent's own earlier claim: where did it get the tier?
    span = TargetSpan(turn=c, start=start, end=end, text=content[start:end])
    note = (f"membership claim: the answer states {span.text!r} where turn {profile} gives "
            f"membership = {tier!r}" + (f"; primed by turn {', '.join(map(str, primers))}"
                                        if primers else ""))
    value = Value(claimed, "membership", (span.text,))
    return ProposedSpan(span, value, tracer.graph(c, edges), DependencyType.HALLUCINATION, note)
