"""Lineage proposals: a deterministic, model-free annotator that traces copied values.

Most claims in an agent's answer carry values copied from earlier turns (a reservation id
from a tool result, a user id the user typed, a price from a search). Their provenance can
be traced exactly by following where each value appears. This package finds such values in
assistant text and builds a provenance graph for each one; docs/lineage.md states every rule
with examples. In short (rules ``lineage-v1``):

* Values: leaves of tool-result JSON and of tool-call arguments (plus dict keys holding a
  digit, such as ``gift_card_3576581``), and typed tokens (ids with a digit, upper-case
  codes, dates, times, numbers) in user text, in non-JSON tool results and in prose leaves
  (``"305 - 250"``). Kept when at least ``min_length`` and at most ``max_length`` characters
  long, not on the stop list, and not a lower-case word (categories such as ``economy``
  are not copied values). System turns add no values but are searched as sources.
* Target spans: the first occurrence of each value in an assistant turn's content, when the
  value was known before that turn.
* Parent of "turn c needs value v": the latest earlier turn that introduced or restated v:
  a user or system turn holding it, a tool result holding it that did not merely echo its
  own call's arguments, or an assistant turn whose *content* holds it (a summary: the chain
  continues from there). A call line repeating a value is not a place it entered. An echoing
  tool result is used only when nothing else holds the value.
* A tool result gets the structural edge to the turn that issued its call; that call's
  argument values are traced in turn, and so on until exogenous turns.
* Derived amounts (``$72`` = ``$412`` - ``$340`` stated earlier in the same answer) and
  exactly decidable contradictions (a time or date that occurs nowhere earlier while the
  latest tool result naming the clause's key gives one different value) are the only
  non-copied spans proposed.

The package is split by role (each module says what it is for), each built on the ones
before it: ``_config`` (settings, stop list, rule reasons and the summary of counts),
``_values`` (what a value is, its surface forms, where it stands alone in a text),
``_tracing`` (one conversation's values, the parent rule, backward tracing into graphs),
``_spans`` (span selection per answer turn: copied values, derived amounts),
``_hallucination`` (the contradiction decision) and ``_propose`` (the public entry). A new
rule set (``lineage-v2``) changes these and bumps ``RULES_VERSION``.
"""

from __future__ import annotations

# "x as x": public names of the former single module kept out of __all__ as before (tests
# import find_value), re-exported explicitly so that they stay importable from here.
from mtcabench.annotate.lineage._config import (
    DEFAULT_STOP_LIST,
    RULES_VERSION,
    LineageConfig,
    LineageSummary,
)
from mtcabench.annotate.lineage._config import EXCLUDE_REASONS as EXCLUDE_REASONS
from mtcabench.annotate.lineage._config import SKIP_REASONS as SKIP_REASONS
from mtcabench.annotate.lineage._propose import (
    lineage_annotator,
    propose_conversation,
    propose_lineage,
)
from mtcabench.annotate.lineage._values import Value, classify, make_value
from mtcabench.annotate.lineage._values import exclusion as exclusion
from mtcabench.annotate.lineage._values import find_value as find_value
from mtcabench.annotate.lineage._values import json_leaves as json_leaves

__all__ = [
    "DEFAULT_STOP_LIST",
    "RULES_VERSION",
    "LineageConfig",
    "LineageSummary",
    "Value",
    "classify",
    "lineage_annotator",
    "make_value",
    "propose_conversation",
    "propose_lineage",
]
