"""Lineage settings and counts: the rule sets, the stop list, LineageConfig, LineageSummary."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any

from mtcabench.model import DependencyType


@dataclass(frozen=True)
class RuleSet:
    """What one version of the rules does differently (docs/lineage.md states each rule).

    ``lineage-v1`` and ``lineage-v2`` are kept so that their output can be reproduced byte for
    byte; ``lineage-v2`` is the rule of issue 13 (a value links to the latest turn that shows
    it); ``lineage-v3`` adds the elapsed-time hallucinations of issue 27; ``lineage-v4`` (the
    default) gives rules their domains, retail's and telecom's values and their claims, and
    actions claimed as done that no call did; ``lineage-v5`` adds amounts reported as a
    refund, charge or total that the recorded payment contradicts (issue 45).
    """

    version: str
    #: A tool result that shows a value its own call passed (an echo) is where the answer
    #: read it, like any other turn (v2). v1 skipped echoes unless nothing else held it.
    echoes_carry: bool
    #: Dates, times, amounts, counts, case and separators are matched through the
    #: normalisers of ``_normalise`` (v2); v1 matches the exact forms of ``_values`` only.
    normalised: bool
    #: A value in a clause naming a record (a reservation id, a flight number, a payment
    #: method) links to the latest turn that shows it with that record (v2), not to an
    #: unrelated later result.
    record_anchor: bool
    #: City names are airports' cities (v2): a name right before a parenthesised airport code
    #: ("Houston (IAH)") glosses the code, and an address's city is no value; v1 linked
    #: "Houston" in an answer to the profile's address.
    code_glosses: bool
    #: Claims of the user's membership tier that the profile contradicts are hallucinations.
    membership_claims: bool
    #: Clauses joining values read from two or more independent sources are multi-source
    #: spans of their own (v2); in v1 only derived amounts are multi-source.
    clause_spans: bool
    #: Claims that a booking is within (or beyond) the 24-hour window, which the record's
    #: ``created_at`` and the system turn's current time contradict, are hallucinations (v3).
    elapsed_claims: bool = False
    #: The domains each domain-specific rule applies to (v4): ``(rule, domains)`` pairs, the
    #: rule a field name of this class. The conversation's ``domain`` decides; a rule not
    #: listed is domain-free, and a conversation of another domain (or none) gets only the
    #: domain-free rules. None (v1-v3): every rule runs everywhere, as it did.
    domains: tuple[tuple[str, frozenset[str]], ...] | None = None
    #: Retail's and telecom's values (v4): phone numbers a user types, data amounts
    #: ("15.1 GB" is ``"data_used_gb": 15.1``), and short money amounts of tool results
    #: ("$4.00" is ``"charge": "4.0"``), which become spans only where written as "$4";
    #: medical's: the record ids a user types ("PS-84201", "PC-20160314-ECW") and triage
    #: levels ("ESI-3"), one value each.
    domain_vocabulary: bool = False
    #: An order's status that the order's record contradicts ("Order #W4284542 is
    #: delivered" where it is pending) and an item's price that the item's record
    #: contradicts (v4, retail).
    order_claims: bool = False
    #: A line's status, data used and data limit that the line's or plan's record
    #: contradicts (v4, telecom).
    line_claims: bool = False
    #: A claim's context decides whether it is one (v4): a list item under a heading of
    #: conditions ("can only be cancelled if one of the following is met:") states the
    #: policy, a reported claim ("you've indicated you're a Gold member") is the user's, and
    #: "the window is within 24 hours of booking" states the rule. v3 proposed 24 such spans
    #: on tau2's airline runs.
    claim_context: bool = False
    #: An action the answer claims as done ("I've cancelled your order", "has been
    #: successfully booked") where no call of the tools that do it succeeded before (v4,
    #: ``_actions.ACTIONS``: a verb -> tool map per domain).
    action_claims: bool = False
    #: An amount the answer reports as a refund, charge or booking total that the payment
    #: its call recorded in the record's ``payment_history`` contradicts (v5, ``_amounts``).
    amount_claims: bool = False

    def applies(self, rule: str, domain: str | None) -> bool:
        """Whether ``rule`` (a field name) runs on a conversation of ``domain``."""
        if not getattr(self, rule):
            return False
        if self.domains is None:
            return True
        only = dict(self.domains).get(rule)
        return only is None or domain in only


RULE_SETS: dict[str, RuleSet] = {
    "lineage-v1": RuleSet("lineage-v1", echoes_carry=False, normalised=False,
                          record_anchor=False, code_glosses=False, membership_claims=False,
                          clause_spans=False),
    "lineage-v2": RuleSet("lineage-v2", echoes_carry=True, normalised=True,
                          record_anchor=True, code_glosses=True, membership_claims=True,
                          clause_spans=True),
    "lineage-v3": RuleSet("lineage-v3", echoes_carry=True, normalised=True,
                          record_anchor=True, code_glosses=True, membership_claims=True,
                          clause_spans=True, elapsed_claims=True),
    "lineage-v4": RuleSet("lineage-v4", echoes_carry=True, normalised=True,
                          record_anchor=True, code_glosses=True, membership_claims=True,
                          clause_spans=True, elapsed_claims=True, domain_vocabulary=True,
                          order_claims=True, line_claims=True, claim_context=True,
                          action_claims=True,
                          domains=(
                              # airports, the airline's tiers and its 24-hour window
                              ("code_glosses", frozenset({"airline"})),
                              # medical and medical_triage: their record ids (issue 45;
                              # no output of v4 on the earlier domains changes)
                              ("domain_vocabulary", frozenset({"retail", "telecom", "medical",
                                                               "medical_triage"})),
                              ("membership_claims", frozenset({"airline"})),
                              ("elapsed_claims", frozenset({"airline"})),
                              ("order_claims", frozenset({"retail"})),
                              ("line_claims", frozenset({"telecom"})),
                              # the domains whose tools the verb -> tool map knows
                              ("action_claims", frozenset({"airline", "retail", "telecom"})),
                          )),
}
# v4 and the stated amounts of issue 45: refunds, charges and totals against the payment the
# call recorded (airline's reservations, retail's orders)
RULE_SETS["lineage-v5"] = replace(
    RULE_SETS["lineage-v4"], version="lineage-v5", amount_claims=True,
    domains=RULE_SETS["lineage-v4"].domains + (
        ("amount_claims", frozenset({"airline", "retail"})),))

#: The default rules version; written into every record's annotator. A rule change is a new
#: entry of RULE_SETS, never an edit of an existing one.
RULES_VERSION = "lineage-v4"

#: The most turns a proposed graph may hold. A span whose graph would hold more is not
#: proposed (counted as ``large-graph``): an agent paging through results with a cursor
#: chains every call to the one before, and its graphs (and the output) would grow with the
#: square of the conversation. The real conversations' largest graph holds 44 turns. A
#: limit, not a setting: it changes no result below it, so no signature names it.
MAX_GRAPH_TURNS = 100

#: Values that are leaves but carry no provenance worth tracing (compared case-insensitively).
DEFAULT_STOP_LIST: frozenset[str] = frozenset(
    {"EST", "UTC", "USA", "N/A", "NA", "None", "null", "True", "False", "Error", "ID", "OK"}
)


@dataclass(frozen=True)
class LineageConfig:
    """The tunable rules of the lineage annotator (defaults are those of ``rules``)."""

    #: The rules version (a key of RULE_SETS): ``lineage-v4`` (default), ``lineage-v5``,
    #: ``lineage-v3``, ``lineage-v2`` or ``lineage-v1``.
    rules: str = RULES_VERSION
    #: Shortest value kept, in characters of its canonical text (``151``, ``JFK``; not ``12``).
    min_length: int = 3
    #: Longest value kept: longer leaves are prose (summaries, messages), not copied values.
    max_length: int = 40
    #: Values never traced (case-insensitive).
    stop_list: frozenset[str] = DEFAULT_STOP_LIST
    #: Also trace lower-case words and prose leaves (``economy``, ``delayed``); off: too noisy.
    include_words: bool = False
    #: A value found in more earlier turns than this is too ambiguous to propose as a span.
    max_value_turns: int = 8
    #: Propose ``$x`` amounts equal to the sum or difference of two traced amounts.
    derived_amounts: bool = True
    #: Propose exactly decidable contradictions as hallucination candidates.
    hallucinations: bool = True
    #: Propose clauses joining independent sources as multi-source spans (v2 rules only).
    clause_spans: bool = True

    def __post_init__(self) -> None:
        if self.rules not in RULE_SETS:
            raise ValueError(f"rules must be one of {', '.join(RULE_SETS)}, got {self.rules!r}")
        if self.min_length < 1:
            raise ValueError(f"min_length must be at least 1, got {self.min_length}")
        if self.max_length < self.min_length:
            raise ValueError(f"max_length {self.max_length} is below min_length {self.min_length}")
        if self.max_value_turns < 1:
            raise ValueError(f"max_value_turns must be at least 1, got {self.max_value_turns}")
        object.__setattr__(self, "stop_list", frozenset(self.stop_list))

    @property
    def rule_set(self) -> RuleSet:
        return RULE_SETS[self.rules]

    def as_dict(self) -> dict[str, Any]:
        """The settings as plain JSON values (the stop list sorted).

        The rules version is not a setting here (it leads the signature), and the settings
        v1 did not have are left out under v1: its summaries and hashes stay as they were.
        """
        skip = {"rules"} | (_V2_SETTINGS if self.rules == "lineage-v1" else set())
        d = {f: getattr(self, f) for f in self.__dataclass_fields__ if f not in skip}
        d["stop_list"] = sorted(self.stop_list)
        return d

    def signature(self) -> str:
        """The rules version for its default settings, else ``<version>+<8 hex of them>``.

        Written as the annotator's rules_version, so that candidates made with other
        settings never pass for the defaults' (the summary JSON lists the settings).
        """
        if self.as_dict() == LineageConfig(rules=self.rules).as_dict():
            return self.rules
        blob = json.dumps(self.as_dict(), sort_keys=True).encode()
        return f"{self.rules}+{hashlib.sha256(blob).hexdigest()[:8]}"

    @property
    def stop_folded(self) -> frozenset[str]:
        """The stop list, case-folded (computed once)."""
        folded = self.__dict__.get("_stop_folded")
        if folded is None:
            folded = frozenset(s.casefold() for s in self.stop_list)
            object.__setattr__(self, "_stop_folded", folded)
        return folded


#: Settings that only the v2 rules read.
_V2_SETTINGS = {"clause_spans"}

#: Why a leaf was not made a value (counted in the summary).
EXCLUDE_REASONS = ("min-length", "max-length", "stop-list", "word", "prose")
#: Why a found value or token did not become a span (counted in the summary).
SKIP_REASONS = (
    "repeat-in-turn",  # the value already has a span earlier in the same turn
    "frequent-value",  # found in more than max_value_turns earlier turns
    "no-source",  # only the agent's own call lines hold it: no turn introduced it
    "unsupported-value",  # a typed token that occurs nowhere earlier, not decidable
    "ambiguous-derivation",  # an amount equal to more than one sum/difference
    "ambiguous-contradiction",  # the naming tool result gives several values
    "argument-without-source",  # a call argument no earlier turn holds (not a span)
)
#: Reasons only the v2 rules count (v1 summaries list SKIP_REASONS alone, as before).
SKIP_REASONS_V2 = SKIP_REASONS + (
    "hypothetical-claim",  # a membership tier in a conditional sentence ("if you are ...")
    "clause-one-source",  # a clause whose values were all read from one source
    "code-gloss",  # a name glossing the airport code after it ("Houston (IAH)")
)


@dataclass
class LineageSummary:
    """What a lineage run found and skipped, filled while candidates are yielded."""

    rules_version: str = RULES_VERSION
    settings: dict[str, Any] = field(default_factory=dict)
    conversations: int = 0
    conversations_without_assistant_text: int = 0
    answer_turns: int = 0
    tool_results: int = 0
    tool_results_not_json: int = 0
    tool_results_empty: int = 0
    spans: int = 0
    by_type: Counter = field(default_factory=Counter)
    by_depth: Counter = field(default_factory=Counter)
    by_kind: Counter = field(default_factory=Counter)
    excluded_values: Counter = field(default_factory=Counter)
    skipped: Counter = field(default_factory=Counter)

    def as_dict(self) -> dict[str, Any]:
        return {
            "rules_version": self.rules_version,
            "settings": self.settings,
            "conversations": self.conversations,
            "conversations_without_assistant_text": self.conversations_without_assistant_text,
            "answer_turns": self.answer_turns,
            "tool_results": self.tool_results,
            "tool_results_not_json": self.tool_results_not_json,
            "tool_results_empty": self.tool_results_empty,
            "spans": self.spans,
            "by_type": {t.value: self.by_type.get(t.value, 0) for t in DependencyType},
            "by_depth": {str(d): n for d, n in sorted(self.by_depth.items())},
            "by_kind": dict(sorted(self.by_kind.items())),
            "excluded_values": {r: self.excluded_values.get(r, 0) for r in EXCLUDE_REASONS},
            "skipped": {r: self.skipped.get(r, 0) for r in self._skip_reasons()}
            # the limit's count only where it acted: summaries below it stay as they were
            | ({"large-graph": n} if (n := self.skipped.get("large-graph", 0)) else {}),
        }

    def _skip_reasons(self) -> tuple[str, ...]:
        return SKIP_REASONS if self.rules_version.startswith("lineage-v1") else SKIP_REASONS_V2

    def lines(self) -> list[str]:
        """The summary as plain text lines (what the CLI and the benchmark print)."""
        d = self.as_dict()
        out = [
            (f"lineage {d['rules_version']}: {d['spans']} spans in {d['conversations']} "
             f"conversations ({d['answer_turns']} assistant text turns; "
             f"{d['conversations_without_assistant_text']} conversations without any)"),
            "spans by type:  " + ", ".join(f"{k} {v}" for k, v in d["by_type"].items()),
            "spans by depth: " + ", ".join(f"{k}: {v}" for k, v in d["by_depth"].items()),
            "spans by value kind: " + ", ".join(f"{k} {v}" for k, v in d["by_kind"].items()),
            (f"tool results: {d['tool_results']} ({d['tool_results_not_json']} not JSON, "
             f"{d['tool_results_empty']} empty)"),
            "values excluded by rule: "
            + ", ".join(f"{k} {v}" for k, v in d["excluded_values"].items()),
            "skipped by rule: " + ", ".join(f"{k} {v}" for k, v in d["skipped"].items()),
        ]
        return out
