"""Tokengeist's backward search and the flat baseline, over turn scores from any base scorer.

Both methods only see a function ``shares(node)`` giving, for a node being attributed (the
target span, or an intermediate assistant turn as a whole), a score per preceding turn. The
scores are shares (non-negative, summing to at most 1 over the preceding turns), so that the
threshold means the same thing for every base scorer. This keeps the search independent of
the model and testable on hand-built score tables.

Tokengeist (docs/evaluate.md): breadth-first from the target; at each node keep the top-k
preceding turns whose share is at least ``threshold``; a ``user``/``system`` turn is a leaf;
a ``tool`` result gets the structural edge to the turn that issued its call, and the search
continues from that call's arguments when the assistant issued it (a user's own call, as in
tau2-bench's telecom domain, ends there: the user is exogenous, the user turn a leaf whatever
it called); an ``assistant`` turn is recursed into. ``d_max`` bounds
the number of content edges on a path from the target (the structural edge is bookkeeping,
not a step); a node reached twice is expanded once. Finally edges are pruned with a relative
threshold: an edge survives when its score is at least ``alpha`` times the best score out of
the same node (:func:`mtcabench.graph.prune_relative`), and nodes cut off go with it. A query
no earlier turn holds the text of (a claim, a composed sentence) may have top-k and a relative
threshold of its own (``open_top_k``, ``open_alpha``; off by default).

Calls are traced by their arguments. An assistant turn is a query for each of its parts
(:func:`node_keys`): its text, and each value of each tool call's arguments
(:func:`call_parts`). A turn
reached through a tool result is asked about the call that result answers, and nothing else:
what the tool returned depends on the call's arguments, not on the sentence said before it
("Sure, let me look that up", which attends to the system prompt). A turn reached because a
later text drew on it is asked about every part; its edges are the union of its parts'
selections, an edge found by two parts keeping the better score.

Values decide among candidates (``match_values``, on by default). A value comes from a turn
that holds it: when the text a query asks about (the target span, or one argument value of a
call) appears verbatim in earlier turns (case and spacing aside, at least
:data:`MIN_VALUE_CHARS` characters), the parents of that query are chosen among those turns,
by their shares as before. Attention alone spreads a call's argument over every turn that
talks about the same entity (the assistant's "let me look up your order", the earlier lookups,
the policy), and the graph grows two to three times too big on agents other than the one the
defaults were tuned on (docs/evaluate.md, "Domains and agents"). The model still decides
which holder (the user who typed an id, or the tool result that listed it), and it decides
alone when no turn holds the value, or when no holder scores at least the threshold (a value
the agent composed, or one a short string matches by chance).

A value's origin (``value_origin``, on by default). A call's argument is often held by the
turn that first gave it (the user who typed the id, the record that listed it) and by an
assistant turn that restated it since ("let me look up reservation ABC123"), which attention
prefers for being nearer. In the search for an open target (a claim: where its information
came from), an argument's candidate holders are cut to the user, tool and system turns among
them (:func:`origins`), when one of those is a candidate: the value is credited to where it
came from, not to where it was repeated. A value span's search keeps the restatement, the copy
the call copied (the lineage rules' chain of copies, which the value gold is).

The values a claim names (``named_values``, on by default). A claim copies no earlier text,
but it may name values ("the refund of $120", "flight HAT045 on 2024-05-17"): the record it
speaks of holds them, the other records the conversation fetched do not, and attention alone
credits every record about the same kind of thing. With the setting, an open target's
candidate tool results are cut to those holding one of the values it names
(:func:`named_values`: its words holding a digit, three characters or more), when one of them
is a candidate; user and system turns are not cut (the request, the rule).

The sentence relayed (``relay_sentences``, off by default). An assistant turn a later text
drew on ("Your reservation was cancelled; the refund of $120 goes to your card in 5-7 days")
said more than the one sentence the later text relays, and asked about as a whole it brings
the sources of every sentence. With the setting, such a turn is asked about its sentences that
restate the text that drew on it (:func:`restating`: the most content words shared with it, at
least :data:`MIN_SHARED_WORDS`), and as a whole where none does. The sentences must be among
the queries the pass computed (:func:`relay_nodes`, added when the setting is on).

The policy behind a conclusion (``open_system``, 0.05 by default). A target no earlier turn
holds the text of (a claim: a refusal, an eligibility, a stated rule) may draw on the system
turn's rules, which the conclusion attends to thinly (one sentence of a long prompt) while the
record the rule was applied to takes the top of the ranking and the relative threshold. With
``open_system`` set, such a target keeps the system turn as a parent when its share is at least
that, whatever top-k and ``alpha`` say; the system turn is a leaf, so the edge is added after
pruning and changes nothing else in the graph.

Flat: the target's own scores once, edges from the target to the selected turns, same pruning
and the same value rules (and policy rule) for the target.
"""

from __future__ import annotations

import json
import re
from collections import deque
from collections.abc import Callable, Hashable, Sequence
from typing import NamedTuple

from mtcabench.evaluate._settings import SearchSettings
from mtcabench.evaluate.attribution._sentences import split_sentences
from mtcabench.graph import prune_relative
from mtcabench.model import Conversation, Edge, EdgeKind, ProvenanceGraph, Role, Turn

#: The node key of the target span in ``shares`` calls (a whole intermediate turn is asked for
#: under its index, a part of one under its :class:`Part`).
TARGET = "target"


class Part(NamedTuple):
    """A query that is part of an assistant turn: ``Turn.text[start:end]`` of turn ``turn``."""

    turn: int
    start: int
    end: int


SharesFn = Callable[[Hashable], dict[int, float]]


def call_parts(turn: Turn, i: int) -> list[Part]:
    """The texts of the ``i``-th tool call of ``turn`` that a search reads: each argument's
    value (``"mia_li_3668"`` in ``get_user({"user_id": "mia_li_3668"})``), or the whole call
    line when it has no arguments (the call alone is then what the context decided).

    Values, not keys: a key is the tool's schema and reads the system prompt that describes
    the tool; the value is what some earlier turn gave. Offsets follow
    :meth:`~mtcabench.model.ToolCall.render` (``json.dumps`` with its default separators).
    """
    offset = len(turn.content) + 1 if turn.content else 0
    for call in turn.tool_calls[:i]:
        offset += len(call.render()) + 1
    call = turn.tool_calls[i]
    if not call.arguments:
        return [Part(turn.index, offset, offset + len(call.render()))]
    parts = []
    pos = offset + len(call.name) + 2  # past "name({"
    for key, value in call.arguments.items():
        pos += len(json.dumps(key, ensure_ascii=False)) + 2  # the key and ": "
        size = len(json.dumps(value, ensure_ascii=False))
        parts.append(Part(turn.index, pos, pos + size))
        pos += size + 2  # the value and ", "
    return parts


def node_keys(conversation: Conversation, turn: int) -> list[Hashable]:
    """The queries of an assistant turn reached as a content parent: the whole turn (its
    index) when it calls no tool, else its text (when it says something) and each call's
    parts."""
    t = conversation.turns[turn]
    if not t.tool_calls:
        return [turn]
    text = [Part(turn, 0, len(t.content))] if t.content.strip() else []
    return text + [p for i in range(len(t.tool_calls)) for p in call_parts(t, i)]


def sentence_parts(conversation: Conversation, turn: int) -> list[Part]:
    """The sentences of an assistant turn's own text (not its calls) as queries, blanks
    trimmed; none when the text is one sentence (the turn's text is then the query)."""
    content = conversation.turns[turn].content
    parts = []
    for start, end in split_sentences(content):
        piece = content[start:end]
        if piece.strip():
            lead = len(piece) - len(piece.lstrip())
            parts.append(Part(turn, start + lead, start + len(piece.rstrip())))
    return parts if len(parts) > 1 else []


def relay_nodes(conversation: Conversation, last_turn: int) -> list[Part]:
    """The sentences of every assistant turn before ``last_turn``: the queries
    ``relay_sentences`` asks besides :func:`query_nodes`."""
    return [p for t in conversation.turns[:last_turn] if t.role is Role.ASSISTANT
            for p in sentence_parts(conversation, t.index)]


#: The fewest content words a sentence shares with the text that drew on its turn to restate
#: it: one shared word ("reservation") is a topic, two or more a statement.
MIN_SHARED_WORDS = 2
#: Words too common in agents' sentences to say that two of them state the same thing.
_STOPWORDS = frozenset((
    "the", "and", "for", "you", "your", "are", "was", "were", "has", "have", "had", "this",
    "that", "with", "from", "will", "can", "not", "but", "our", "its", "all", "any", "there",
    "their", "they", "them", "then", "than", "what", "when", "which", "who", "how", "would",
    "could", "should", "been", "being", "into", "out", "about", "also", "just", "let",
    "please", "here", "now", "one",
))


def content_words(text: str) -> set[str]:
    """The words of ``text`` that say something: case folded, three characters or more,
    numbers kept (an amount, a date), the commonest words left out."""
    words = re.findall(r"[\w$][\w$.,:/-]*\w", text.casefold())
    return {w for w in words if len(w) >= 3 and w not in _STOPWORDS}


def restating(conversation: Conversation, turn: int, said: str) -> list[Part]:
    """The sentences of assistant turn ``turn`` that restate ``said`` (the text that drew on
    the turn): those sharing the most content words with it, at least
    :data:`MIN_SHARED_WORDS`; none when no sentence does (or the turn is one sentence)."""
    wanted = content_words(said)
    text = conversation.turns[turn].text
    scored = [(len(wanted & content_words(text[p.start:p.end])), p)
              for p in sentence_parts(conversation, turn)]
    best = max((n for n, _ in scored), default=0)
    return [p for n, p in scored if n == best] if best >= MIN_SHARED_WORDS else []


def query_text(conversation: Conversation, key: Hashable, target_text: str) -> str:
    """The text a query asks about: the target's span, a part's range, a whole turn's text."""
    if key == TARGET:
        return target_text
    if isinstance(key, Part):
        return conversation.turns[key.turn].text[key.start:key.end]
    return conversation.turns[key].text


def answered_call(conversation: Conversation, tool_turn: int) -> list[Part]:
    """The queries of the call a tool result answers (see :func:`call_parts`)."""
    call_turn = conversation.turns[conversation.call_turn(tool_turn)]
    wanted = conversation.turns[tool_turn].tool_call_id
    # A call id repeated within a turn: the later call is the one answered (Conversation's rule).
    i = max(i for i, c in enumerate(call_turn.tool_calls) if c.id == wanted)
    return call_parts(call_turn, i)


def query_nodes(conversation: Conversation, last_turn: int) -> list[Hashable]:
    """Every query a search before ``last_turn`` may ask shares for (besides the target)."""
    return [k for t in conversation.turns[:last_turn]
            if t.role is Role.ASSISTANT and t.text for k in node_keys(conversation, t.index)]


#: The shortest value matched against earlier turns (see the module docstring): shorter
#: strings ("no", "2") occur everywhere and say nothing about where a value came from.
MIN_VALUE_CHARS = 3


def normalised(text: str) -> str:
    """``text`` as values are matched: case folded, runs of white space as one space."""
    return " ".join(text.casefold().split())


def argument_values(conversation: Conversation, part: Part) -> list[str]:
    """The values a call-argument query asks about: the argument's string or number, or each
    one of a list of them; none for a turn's text, a call without arguments or a nested
    object (the model alone decides those)."""
    turn = conversation.turns[part.turn]
    if not turn.tool_calls or part.start < (len(turn.content) + 1 if turn.content else 0):
        return []  # the turn's own text, not a call
    try:
        value = json.loads(turn.text[part.start:part.end])
    except ValueError:
        return []  # a call without arguments: the whole call line
    items = value if isinstance(value, list) else [value]
    if not all(isinstance(v, (str, int, float)) and not isinstance(v, bool) for v in items):
        return []
    return [str(v) for v in items]


class ValueIndex:
    """The turns of a conversation as values are matched (normalised once per search)."""

    def __init__(self, conversation: Conversation, until: int):
        self._texts = [normalised(t.text) for t in conversation.turns[:until]]

    def holders(self, values: Sequence[str], before: int) -> set[int]:
        """The turns before ``before`` whose text holds one of ``values``."""
        wanted = [v for v in map(normalised, values) if len(v) >= MIN_VALUE_CHARS]
        return {t for t, text in enumerate(self._texts[:before])
                if any(v in text for v in wanted)}


def is_open(conversation: Conversation, turn: int, text: str) -> bool:
    """Whether no turn before ``turn`` holds ``text`` (a claim, a sentence the agent composed):
    the targets the claims' rules (``open_system``, ``named_values``, ``value_origin``) act
    on."""
    return not ValueIndex(conversation, turn).holders([text], turn)


def is_candidate(share: float, settings: SearchSettings) -> bool:
    """Whether a turn with this share can be selected: above zero and at least the threshold
    (a share of zero never counts, even with threshold 0)."""
    return share > 0 and share >= settings.threshold


def among_holders(shares: dict[int, float], holders: set[int],
                  settings: SearchSettings) -> dict[int, float]:
    """``shares`` cut to the turns holding the queried value, when one of them is a candidate
    (a share of at least the threshold); all of them otherwise (the model decides alone)."""
    if not settings.match_values or not holders:
        return shares
    held = {t: s for t, s in shares.items() if t in holders}
    if any(is_candidate(s, settings) for s in held.values()):
        return held
    return shares


def origins(conversation: Conversation, holders: set[int], shares: dict[int, float],
            settings: SearchSettings) -> set[int]:
    """``holders`` without the assistant turns (restatements) when a user, tool or system turn
    among them is a candidate (a share of at least the threshold)."""
    first = {t for t in holders if conversation.turns[t].role is not Role.ASSISTANT}
    if any(is_candidate(shares.get(t, 0.0), settings) for t in first):
        return first
    return holders


def named_values(text: str) -> list[str]:
    """The values a text names: its words holding a digit, three characters or more (an
    amount, a date, an id, a flight number), leading currency signs and trailing punctuation
    left out."""
    words = re.findall(r"[\w$][\w$.:/-]*\w", text)
    return sorted({w.lstrip("$") for w in words
                   if any(c.isdigit() for c in w) and len(w.lstrip("$")) >= MIN_VALUE_CHARS})


def among_named(shares: dict[int, float], conversation: Conversation, values: ValueIndex,
                named: Sequence[str], before: int, settings: SearchSettings) -> dict[int, float]:
    """``shares`` without the tool results that hold none of ``named``, when one that holds
    one is a candidate (a share of at least the threshold); unchanged otherwise."""
    if not settings.named_values or not named:
        return shares
    holding = values.holders(named, before)
    tools = {t for t in shares if conversation.turns[t].role is Role.TOOL}
    if not any(is_candidate(shares[t], settings) for t in tools & holding):
        return shares
    return {t: s for t, s in shares.items() if t not in tools or t in holding}


def select_parents(shares: dict[int, float], before: int, settings: SearchSettings) -> list[tuple[int, float]]:
    """The top-k turns before ``before`` with a share of at least the threshold, best first.

    Ties go to the later turn (the nearer one), so that results do not depend on dict order.
    A share of zero never counts, even with threshold 0.
    """
    eligible = [(t, s) for t, s in shares.items() if t < before and is_candidate(s, settings)]
    eligible.sort(key=lambda ts: (-ts[1], -ts[0]))
    return eligible[: settings.top_k]


def with_policy(graph: ProvenanceGraph, conversation: Conversation, target_shares: dict[int, float],
                open_target: bool, settings: SearchSettings) -> ProvenanceGraph:
    """``graph`` with an edge from its target to each system turn whose share of the target
    is at least ``settings.open_system``, when the target is open (no earlier turn holds its
    text); unchanged otherwise (see the module docstring)."""
    if settings.open_system is None or not open_target:
        return graph
    have = {e.parent for e in graph.edges if e.child == graph.target}
    added = [Edge(child=graph.target, parent=t, score=s) for t, s in sorted(target_shares.items())
             if t < graph.target and t not in have and s >= settings.open_system
             and conversation.turns[t].role is Role.SYSTEM]
    if not added:
        return graph
    return ProvenanceGraph(target=graph.target,
                           nodes=sorted({*graph.nodes, *(e.parent for e in added)}),
                           edges=[*graph.edges, *added])


def tokengeist(
    conversation: Conversation, target_turn: int, shares: SharesFn, settings: SearchSettings,
    target_text: str = "",
) -> ProvenanceGraph:
    """Tokengeist's provenance graph of a target span in ``target_turn`` (pruned);
    ``target_text`` is the span's text, the value its parents are matched on."""
    turns = conversation.turns
    values = ValueIndex(conversation, target_turn)
    edges: dict[tuple[int, int], Edge] = {}
    nodes = {target_turn}
    queued: set[Hashable] = {TARGET}
    queue: deque[tuple[Hashable, int, int]] = deque([(TARGET, target_turn, 0)])
    alphas: dict[int, float] = {}  # the relative threshold out of a node with open queries
    target_shares: dict[int, float] = {}
    open_target = False
    while queue:
        key, turn, depth = queue.popleft()
        if depth >= settings.d_max:
            continue  # stop: depth limit reached, the node stays a leaf
        asked = [target_text] if key == TARGET else (
            argument_values(conversation, key) if isinstance(key, Part) else [])
        holders = values.holders(asked, turn)
        query = settings.for_query(open_query=not holders)
        if query is not settings:
            alphas[turn] = min(alphas.get(turn, query.alpha), query.alpha)
        asked_shares = shares(key)
        if key == TARGET:
            target_shares, open_target = asked_shares, not holders
        if settings.value_origin and open_target and isinstance(key, Part) and holders:
            holders = origins(conversation, holders, asked_shares, settings)
        candidates = among_holders(asked_shares, holders, settings)
        if key == TARGET and not holders:
            candidates = among_named(candidates, conversation, values,
                                     named_values(target_text), turn, settings)
        for parent, score in select_parents(candidates, turn, query):
            have = edges.get((turn, parent))
            if have is None or have.score < score:  # two parts of one turn: the better score
                edges[(turn, parent)] = Edge(child=turn, parent=parent, score=score)
            nodes.add(parent)
            role = turns[parent].role
            if role is Role.TOOL:
                call = conversation.call_turn(parent)
                edges.setdefault((parent, call),
                                 Edge(child=parent, parent=call, kind=EdgeKind.STRUCTURAL))
                nodes.add(call)
                if turns[call].role is not Role.ASSISTANT:
                    continue  # a user's own call: the user is exogenous, their turn a leaf
                nxt = answered_call(conversation, parent)
            elif role is Role.ASSISTANT:
                relayed = (restating(conversation, parent,
                                     query_text(conversation, key, target_text))
                           if settings.relay_sentences else [])
                nxt = relayed or node_keys(conversation, parent)
            else:
                continue  # user / system: a source, a leaf
            for k in nxt:
                if k not in queued:
                    queued.add(k)
                    queue.append((k, k.turn if isinstance(k, Part) else k, depth + 1))
    graph = ProvenanceGraph(target=target_turn, nodes=sorted(nodes), edges=list(edges.values()))
    return with_policy(prune_relative(graph, settings.alpha, alphas), conversation,
                       target_shares, open_target, settings)


def flat(target_turn: int, shares: SharesFn, settings: SearchSettings,
         conversation: Conversation | None = None, target_text: str = "") -> ProvenanceGraph:
    """The flat baseline: the target linked directly to its selected turns (pruned), matched
    on ``target_text`` in ``conversation`` as Tokengeist's target is."""
    target_shares = candidates = shares(TARGET)
    holders: set[int] = set()
    if conversation is not None:
        values = ValueIndex(conversation, target_turn)
        holders = values.holders([target_text], target_turn)
        candidates = among_holders(candidates, holders, settings)
        if not holders:
            candidates = among_named(candidates, conversation, values,
                                     named_values(target_text), target_turn, settings)
    query = settings.for_query(open_query=not holders)
    selected = select_parents(candidates, target_turn, query)
    edges = [Edge(child=target_turn, parent=p, score=s) for p, s in selected]
    graph = ProvenanceGraph(
        target=target_turn, nodes=sorted({target_turn, *(p for p, _ in selected)}), edges=edges
    )
    graph = prune_relative(graph, query.alpha)
    if conversation is None:
        return graph
    return with_policy(graph, conversation, target_shares, not holders, settings)
