"""The claim proposer: deterministic, model-free claim targets in an agent's answers, typed.

A claim is a clause that asserts something the agent concluded (docs/claims.md). The proposer
reads every assistant turn that has text and proposes each clause that asserts something,
with the kind of claim its wording says:

1. **The message**: a turn written as a JSON object (``{"message": "..."}``, as some tau2
   agents answer) is read inside its message string; its ``\\n`` escapes break lines there.
2. **Clauses**: sentences, the lines of a listing and the parts of a line joined by ``;``
   (the lineage rules' :func:`~mtcabench.lineage.clauses`, which cut list markers, emphasis
   and closing punctuation).
3. **Left out**: questions (a clause ending in ``?``, or opening with a question word), offers,
   requests and instructions to the user ("Would you like", "Please confirm", "Let me know",
   "Turn airplane mode off"), conditionals ("If you ..."), greetings, thanks and farewells,
   announcements of what the agent is about to do ("Let me check", "One moment"), a listing's
   heading that only announces ("Here are the details:", "the following flights:"; one that
   asserts, "You have three pending orders:", is kept), a field line of a record ("Status:
   pending": the value is the lineage rules' span) unless its label names something worked
   out ("Total refund: $1,515") or a sentence follows the label, tool calls written out, and
   clauses of fewer than :data:`MIN_WORDS` words.
4. **The kind**: the first of :data:`KIND_RULES` whose pattern the clause matches, in that
   order (a confirmation before a decision before an eligibility ...); a clause none matches
   is ``other``.

It proposes targets only, never a graph: the graph is the annotator's (a person, or the LLM
pipeline's). Its recall against the annotated set is measured in docs/claims.md.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass

from mtcabench.lineage import clauses
from mtcabench.model import ClaimKind, Conversation, Role, TargetSpan

#: A clause of fewer words asserts too little to be a target ("Done.", "Sure thing").
MIN_WORDS = 4
#: Words after a field's label that make it a sentence rather than a value.
SENTENCE_WORDS = 6
#: The keys whose string value is the message of a turn written as a JSON object.
MESSAGE_KEYS = ("message", "content", "response", "text", "answer")

_I = "(?i)"
#: Words that open a clause without changing what it asserts ("Also, ...", "So ...").
_OPENER = re.compile(r"(?i)^(?:(?:also|so|now|and|but|additionally|however|alright|okay|"
                     r"ok|great|perfect|thanks|thank\s+you|yes|no|sure)\b[,!.—–-]*\s*)+")
#: Clauses that assert nothing: questions, offers, requests, instructions to the user,
#: conditionals, greetings, announcements of what the agent is about to do.
_NOT_A_CLAIM = re.compile(_I + r"""^(?:
    (?:would|could|can|shall|should|do|does|did|is|are|was|were|will|may|have|has|what|which
       |when|where|who|how|why)\b(?!\s+not\b)
  | (?:please|kindly)\b
  | let\s+me\b | (?:let's|lets)\b | if\b | unless\b | once\b | as\s+soon\s+as\b
  | feel\s+free | just\s+let\s+me\s+know | here(?:'s|’s|\s+is|\s+are)\b
  | (?:hi|hello|hey|greetings|good\s+(?:morning|afternoon|evening)|welcome)\b
  | (?:you're\s+welcome|you\s+are\s+welcome|have\s+a\s+(?:great|good|nice|wonderful)
       |goodbye|bye|take\s+care|my\s+pleasure|no\s+problem|sure\b|certainly\b
       |of\s+course\b|absolutely\b|got\s+it|understood|i\s+understand|i'm\s+sorry\s+to\s+hear
       |i\s+am\s+sorry\s+to\s+hear|sorry\s+to\s+hear|i\s+apologi[sz]e)
  | (?:one\s+moment|just\s+a\s+moment|hold\s+on|bear\s+with\s+me)
  | i(?:'ll|’ll|\s+will|'m\s+going\s+to|\s+am\s+going\s+to)\s+(?:now\s+|first\s+)?(?:check|
       look|verify|pull|retrieve|search|find|get|review|go\s+ahead|proceed|help|transfer|need)
  | i\s+(?:need|will\s+need|'ll\s+need|would\s+need)\b
  | i(?:'d|’d|\s+would)\s+(?:be\s+(?:happy|glad|delighted)|like\s+to|recommend)
  | (?:i\s+)?(?:am|i'm)\s+(?:happy|glad|here)\s+to\s+help | i\s+can\s+help
  | how\s+can\s+i | is\s+there\s+anything | anything\s+else
  | to\s+(?:proceed|continue|confirm|help|assist|get\s+started|turn|start|fix|do|enable
       |disable|check)\b
  | (?:could|can|would)\s+you\b | do\s+you\b
  | (?:run|reply|turn|tap|go|open|try|restart|reboot|toggle|share|provide|confirm|select
       |choose|enter|make\s+sure|note|check|send|tell|give|wait|allow|navigate|click|switch
       |enable|disable|remove|insert|reset|then|next|first|after\s+that|again)\b
  | that\s+will\s+(?:tell|show|help|let|allow|confirm)\b
  | \w+\(                                    # a tool call or code written out
)""", re.VERBOSE)
#: A heading that only announces what follows.
_ANNOUNCES = re.compile(r"(?i)\b(?:following|below|details?|summary|here|options?|"
                        r"breakdown|includes?|as follows|these)\b")
#: A field label naming something worked out rather than copied.
_DERIVED_LABEL = re.compile(r"(?i)\b(?:total|refund|amount|difference|balance|cost|"
                            r"passengers|count|eligib|remaining|charge|fee|savings)\w*")
#: Thanks for something the user did ("Thank you for the information"): no claim.
_THANKS = re.compile(r"(?i)^(?:thank\s+you|thanks)(?:\s+(?:so|very)\s+much)?\s+for\b")
#: A record's field line, "Status: pending" / "- **Total:** $230": a value, not a claim.
_FIELD_LINE = re.compile(r"^[\w\s()/#'’-]{1,40}\**:(?:\s|\*|$)")
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)?")

#: The kind of a claim by its wording: the first rule that matches, in this order.
KIND_RULES: tuple[tuple[ClaimKind, re.Pattern[str]], ...] = tuple(
    (kind, re.compile(_I + pattern)) for kind, pattern in (
        (ClaimKind.CONFIRMATION,
         r"\b(?:has|have)\s+(?:now\s+)?(?:been|successfully)\b|\bsuccessfully\b|"
         r"\bi(?:'ve|\s+have)\s+(?:now\s+)?(?:cancel|updat|modif|book|chang|process|add|"
         r"remov|issu|exchang|return|transfer|submit|reset|enabl|disabl|toggl|refund|appl)|"
         r"\bis\s+now\s+(?:booked|confirmed|cancel|updated|active|on\b|off\b)|"
         r"\b(?:is|are)\s+(?:all\s+)?set\b|\bwent\s+through\b|\bwas\s+(?:processed|"
         r"completed|successful)"),
        (ClaimKind.DECISION,
         r"\b(?:i|we)\s+(?:cannot|can't|can\s+not|won't|will\s+not|am\s+unable|'m\s+unable|"
         r"am\s+not\s+able|'m\s+not\s+able|do\s+not|don't)\b|\bunable\s+to\b|"
         r"\bnot\s+(?:possible|able\s+to)\b|\b(?:i'm|i\s+am)\s+sorry,?\s+but\b|"
         r"\bunfortunately\b|\b(?:i|we)\s+(?:can|will|'ll)\s+(?:offer|issue|process|"
         r"proceed|book|cancel|refund|provide|transfer)"),
        (ClaimKind.ELIGIBILITY,
         r"\beligib|\bqualif|\bentitled\b|\bcan\s+(?:still\s+)?be\s+(?:cancel|modif|"
         r"chang|return|exchang|refund)|\b(?:is|are)\s+(?:not\s+)?(?:refundable|"
         r"cancell?able|modifiable|changeable|allowed)\b|\bmeets?\s+the\b"),
        (ClaimKind.POLICY,
         r"\bpolic(?:y|ies)\b|\b(?:must|cannot|can't|can\s+only|may\s+only|only\s+be)\s+be\b|"
         r"\b(?:not\s+)?(?:allowed|permitted)\b|\brules?\b|\brequire[sd]?\b"),
        (ClaimKind.COMPUTATION,
         r"\b(?:total|sum|difference|altogether|combined|in\s+all|subtotal|balance|"
         r"refund(?:ed)?\s+(?:of|amount)|price\s+difference|fare\s+difference|cost\s+of)\b"),
        (ClaimKind.COUNT,
         r"\b(?:\d+|one|two|three|four|five|six|seven|eight|nine|ten|both|all)\s+(?:of\s+"
         r"(?:the|your)\s+)?(?:\w+\s+)?(?:passengers?|items?|reservations?|bags?|orders?|"
         r"flights?|lines?|segments?|tickets?|travell?ers?|products?|devices?|payments?|"
         r"options?)\b"),
        (ClaimKind.COMPARISON,
         r"\b(?:cheap|low|high|fast|short|early|late|best|great)est\b|\b(?:cheaper|lower|"
         r"higher|faster|shorter|earlier|later|more|less|fewer)\s+than\b|"
         r"\bonly\s+(?:option|flight|one)\b|\bsame\s+(?:as|price)\b"),
        (ClaimKind.ABSENCE,
         r"\bno\s+(?:\w+\s+){0,2}(?:flights?|options?|seats?|availability|insurance|record|"
         r"reservations?|orders?|results?|bags?|items?|charges?|fee|refund|available)\b|"
         r"\bthere\s+(?:is|are|were|was)\s+no\b|\bnone\b|\bnothing\b|\bnot\s+(?:available|"
         r"found|listed|included|attached)\b|\bcouldn't\s+find\b|\bcould\s+not\s+find\b|"
         r"\b(?:does|do)\s*(?:n't|\s+not)\s+(?:have|include|show)\b"),
        (ClaimKind.STATUS,
         r"\b(?:is|are|was|were|has|have)\s+(?:already\s+|still\s+|currently\s+|been\s+)*"
         r"(?:pending|delivered|processed|shipped|cancell?ed|active|suspended|landed|"
         r"delayed|flown|departed|on\s+time|completed|in\s+transit|expired|overdue|"
         r"used|confirmed|booked|enabled|disabled|connected|on|off)\b|\bstatus\b|\balready\b"),
        (ClaimKind.SUMMARY,
         r"\b(?:reservation|booking|order|trip|flight|itinerary|account|plan|profile)\b"),
    ))


@dataclass(frozen=True)
class ProposedClaim:
    """A claim target and its kind by the wording (:data:`KIND_RULES`)."""

    span: TargetSpan
    claim_kind: ClaimKind


def message_region(content: str) -> tuple[int, int]:
    """Where the message of an answer stands in its content: inside the JSON string of a turn
    written as a JSON object (:data:`MESSAGE_KEYS`), else the whole content."""
    stripped = content.strip()
    if stripped.startswith("{"):
        try:
            obj = json.loads(stripped)
        except ValueError:
            obj = None
        if isinstance(obj, dict):
            for key in MESSAGE_KEYS:
                if not isinstance(obj.get(key), str):
                    continue
                m = re.search(rf'"{re.escape(key)}"\s*:\s*"', content)
                if m is None:
                    continue
                end = m.end()
                while end < len(content) and content[end] != '"':
                    end += 2 if content[end] == "\\" else 1
                return m.end(), min(end, len(content))
    return 0, len(content)


def claim_kind_of(text: str) -> ClaimKind:
    """The kind a clause's wording says (the first rule of :data:`KIND_RULES` that matches)."""
    text = text.replace("’", "'")  # "can’t" reads as "can't"
    return next((kind for kind, rule in KIND_RULES if rule.search(text)), ClaimKind.OTHER)


def is_claim(text: str, after: str = "") -> bool:
    """Whether a clause asserts something (see the module docstring, step 3); ``after`` is
    the text that follows it (the clause cut leaves out a closing ``?`` or ``:``)."""
    # Curly apostrophes read as straight ones ("I’m", "let’s"), as agents write both.
    whole = text.strip().lstrip("*_#>-• ").strip().replace("’", "'")
    text = _OPENER.sub("", whole)
    closing = after.lstrip("*_ \"'”’)")[:1]
    if len(_WORD.findall(text)) < MIN_WORDS or closing == "?" or text.endswith("?"):
        return False
    if _THANKS.match(whole) or _NOT_A_CLAIM.match(text):
        return False
    if closing == ":" or text.endswith(":"):
        # A listing's heading: a claim when it asserts ("You have three pending orders"),
        # not when it only announces ("Here are the details", "the following flights").
        return not _ANNOUNCES.search(text)
    field = _FIELD_LINE.match(text)
    if field:
        # A record's field line is a value ("Status: pending"), unless its label names what
        # the agent worked out ("Total refund: $1,515") or a sentence follows the label
        # (SENTENCE_WORDS words or more: "IFOYYZ: eligible for cancellation because ...").
        label, rest = text[:field.end()], text[field.end():]
        return bool(_DERIVED_LABEL.search(label)) or len(_WORD.findall(rest)) >= SENTENCE_WORDS
    return True


def propose_claims(conversation: Conversation) -> list[ProposedClaim]:
    """Every claim target of the conversation's answers, in order, typed by its wording."""
    out: list[ProposedClaim] = []
    for turn in conversation.turns:
        if turn.role is not Role.ASSISTANT or not turn.content.strip():
            continue
        lo, hi = message_region(turn.content)
        # A JSON string's "\n" escapes are line breaks of the message: read them as such
        # (same length, so offsets stand), and a closing quote's backslash is no text.
        region = turn.content[lo:hi].replace("\\n", "\n ")
        for start, end in clauses(region):
            clause = turn.content[lo + start: lo + end]
            if is_claim(clause, region[end:end + 4]):
                span = TargetSpan(turn=turn.index, start=lo + start, end=lo + end, text=clause)
                out.append(ProposedClaim(span, claim_kind_of(clause)))
    return out


@dataclass
class ProposerRecall:
    """How many annotated claims the proposer finds: per claim kind, ``(found, claims)``, and
    how many of those found it gives the annotated kind."""

    by_kind: dict[str, list[int]]
    same_kind: int
    proposed: int

    @property
    def found(self) -> int:
        return sum(f for f, _ in self.by_kind.values())

    @property
    def claims(self) -> int:
        return sum(n for _, n in self.by_kind.values())


def proposer_recall(conversations: dict[str, Conversation],
                    claims: Iterable[tuple[str, TargetSpan, ClaimKind]]) -> ProposerRecall:
    """The proposer's recall against annotated claims ``(conversation id, span, kind)``: a claim
    is found when a proposed span of its turn covers at least half of it."""
    proposed: dict[tuple[str, int], list[ProposedClaim]] = {}
    claims = list(claims)
    for cid in sorted({c for c, _, _ in claims}):
        for p in propose_claims(conversations[cid]):
            proposed.setdefault((cid, p.span.turn), []).append(p)
    by_kind: dict[str, list[int]] = {k.value: [0, 0] for k in ClaimKind}
    same = 0
    for cid, span, kind in claims:
        row = by_kind[kind.value]
        row[1] += 1
        hit = next((p for p in proposed.get((cid, span.turn), [])
                    if 2 * (min(p.span.end, span.end) - max(p.span.start, span.start))
                    >= span.end - span.start), None)
        if hit is not None:
            row[0] += 1
            same += hit.claim_kind is kind
    return ProposerRecall({k: v for k, v in by_kind.items() if v[1]}, same,
                          sum(len(v) for v in proposed.values()))
