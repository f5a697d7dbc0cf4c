"""Lineage proposals: a deterministic, model-free annotator that traces copied values.

Most claims in an agent's answer carry values copied from earlier turns (a reservation id
from a tool result, a user id the user typed, a price from a search). Their provenance can
be traced exactly by following where each value appears. This package finds such values in
assistant text and builds a provenance graph for each one; docs/lineage.md states every rule
with examples, and ``mtcabench/resources/lineage/<version>.md`` states each rules version as
the dataset card prints it. In short (rules ``lineage-v4``, the default):

* Values: leaves of tool-result JSON and of tool-call arguments (plus dict keys holding a
  digit, such as ``gift_card_3576581``), typed tokens (ids with a digit, upper-case codes,
  dates, times, numbers) in user text, in non-JSON tool results and in prose leaves, and what
  the normalisers read (dates and times in words, counts such as "two passengers").
* Matching: exact forms, and the normalisers of ``_normalise`` (dates, times, amounts,
  counts, case and separators of ids); a match always stands alone.
* Target spans: the first occurrence of each value in an assistant turn's content, when the
  value was known before that turn.
* The edge rule: "turn c needs value v" links to the latest earlier turn that carries v (the
  one c read it from): a user or system turn, a tool result (also one that echoes its own
  call's argument), or an assistant turn whose content holds it (the chain continues from
  there). A tool result gets the structural edge to the turn that issued its call, and each
  of the call's arguments links to its latest earlier carrier, recursively.
* Multi-source: derived amounts (``$72`` = ``$412`` - ``$340``) and clauses joining values
  of independent sources (``_clauses``). Hallucination: a time or date contradicting the one
  value of the tool-result key its clause names, a membership tier the profile contradicts
  (``_claims``), and (since ``lineage-v3``) a claim about the 24-hour window that the
  record's ``created_at`` and the policy's current time contradict (``_elapsed``).

``lineage-v4`` gives rules their domains (``RuleSet.domains``: the airline's rules run only on
airline conversations), reads retail's and telecom's values, and decides claims of their
records (``_records``: an order's status, an item's price, a line's status and data).
``lineage-v3`` (kept byte for byte) runs every rule on every conversation.
``lineage-v2`` (``LineageConfig(rules="lineage-v2")``) reproduces v3 without the
elapsed-time claims, byte for byte; ``lineage-v1`` (``LineageConfig(rules="lineage-v1")``) the
earlier rules, byte for byte: exact matching only, an echoing tool result skipped unless
nothing else holds the value, no clause spans and no membership claims.

The package is split by role (each module says what it is for), each built on the ones
before it: ``_config`` (rule sets, settings, stop list, rule reasons and the summary),
``_values`` (what a value is, its exact forms, where it stands alone in a text),
``_normalise`` (the normalisers), ``_vocabulary`` (one conversation's values), ``_index``
(which turns may hold a value: tokens and mentions, so that nothing scans every earlier
turn), ``_occurrences`` (where values stand, the parent rule), ``_tracing`` (the record
anchor, backward tracing into graphs, bounded by ``MAX_GRAPH_TURNS``), ``_spans`` (span selection per
answer turn), ``_clauses`` (multi-source clauses), ``_hallucination`` and ``_claims`` (the
contradiction decisions; ``_elapsed``: v3's elapsed-time claims; ``_records``: v4's record
claims), ``_propose`` (the public
entry) and ``_counterfactual`` (hallucinations made by replacing an answer's value with
another entity's, on top of the tracing). A new rule set is a new entry
of ``RULE_SETS``; an existing one never changes.
"""

from __future__ import annotations

# "x as x": public names of the former single module kept out of __all__ as before (tests
# import find_value), re-exported explicitly so that they stay importable from here.
from mtcabench.lineage._config import (
    DEFAULT_STOP_LIST,
    RULE_SETS,
    RULES_VERSION,
    LineageConfig,
    LineageSummary,
    RuleSet,
)
from mtcabench.lineage._config import EXCLUDE_REASONS as EXCLUDE_REASONS
from mtcabench.lineage._config import SKIP_REASONS as SKIP_REASONS
from mtcabench.lineage._counterfactual import (
    COUNTERFACTUAL_VERSION,
    check_real_conversations,
    conversation_counterfactuals,
    propose_counterfactuals,
)
from mtcabench.lineage._method import StringMatch, string_match_graph
from mtcabench.lineage._occurrences import clauses
from mtcabench.lineage._propose import (
    lineage_annotator,
    propose_conversation,
    propose_lineage,
)
from mtcabench.lineage._values import Value, classify, make_value
from mtcabench.lineage._values import exclusion as exclusion
from mtcabench.lineage._values import find_value as find_value
from mtcabench.lineage._values import json_leaves as json_leaves

__all__ = [
    "COUNTERFACTUAL_VERSION",
    "DEFAULT_STOP_LIST",
    "RULES_VERSION",
    "RULE_SETS",
    "RuleSet",
    "LineageConfig",
    "LineageSummary",
    "StringMatch",
    "Value",
    "classify",
    "clauses",
    "check_real_conversations",
    "conversation_counterfactuals",
    "lineage_annotator",
    "make_value",
    "propose_conversation",
    "propose_counterfactuals",
    "propose_lineage",
    "string_match_graph",
]
