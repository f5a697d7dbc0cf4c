"""A release split by task (``--split-by-task``) and the cap on spans per conversation.

Split by task: every conversation, and every span with it, is in the split of its task by the
benchmark format's rule (:func:`mtcabench.benchmark.split_of`, the studies' rule), so that
no task's runs (any agent, any source, any trial, a counterfactual of one) are on two sides and
a study's dev and test never see a release's training data. The studies leave trials 2 and
later of a dev or test task unused; a release keeps every conversation and puts all trials of
a task in the task's split. The data files are cut by source, domain and split
(``data/spans/<source>/<domain>-<split>.parquet``), and every config has the splits it holds:
``spans`` and ``all`` (every domain), one per domain (its spans), ``conversations``, one
``<domain>-conversations`` per domain, and one per source as before.

The cap: at most N spans of one conversation are released, drawn by a seeded generator of the
conversation's id (the same N on every build), so that a verbose conversation that repeats
its values does not outweigh its domain; the card says how many spans it removed per domain.
"""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from typing import Any

from mtcabench import resources
from mtcabench.benchmark import SPLITS, split_of, task_of
from mtcabench.graph import Violation
from mtcabench.model import (
    NO_AGENT,
    BenchmarkSpan,
    Candidate,
    Conversation,
    DependencyType,
    SpanKind,
    SpanOrigin,
    domain_name,
)
from mtcabench.release._card import wilson
from mtcabench.release._stats import hops_by_type

#: The suffix of a domain's (or source's) conversations config.
CONVERSATIONS = "-conversations"
#: How the card states the split rule.
SPLIT_RULE = (
    "Split by task: all the runs of one task (every agent, source and trial, and the "
    "counterfactuals made from them) are in one split, so no task is on two sides. A numeric "
    "task id goes by its value mod 5, any other task id (tau2-bench telecom names its tasks) "
    "by the CRC-32 of its name mod 5: 2, 3, 4 are `train`, 0 `dev`, 1 `test` "
    "(`mtcabench.benchmark.split_of`, the rule of mtcabench's studies, which use trials 0 and 1 "
    "of a dev or test task; this release keeps every trial, in its task's split).")


def conversation_split(conversation_id: str) -> str:
    """The release split of a conversation (or of a span, by its conversation's id)."""
    return split_of(conversation_id, all_trials=True) or "test"


def domain_violations(convs: Iterable[Conversation], sources: Iterable[str]) -> list[Violation]:
    """Domains that cannot name a file and a config: each conversation named once per domain.

    The name rule (:func:`mtcabench.model.domain_name`) holds for every record read; it is
    checked again here (a conversations file is data), with the one thing it cannot know: no
    domain may take a source's config name (``<source>`` or ``<source>-conversations``)."""
    taken = set(sources) | {f"{s}{CONVERSATIONS}" for s in sources}
    seen: dict[str, str] = {}
    for c in convs:
        seen.setdefault(c.domain, c.id)
    out = []
    for domain, cid in sorted(seen.items()):
        try:
            ok = domain_name(domain) == domain
            why = f"domain {domain!r} is not in its normal form {domain_name(domain)!r}"
        except ValueError as exc:
            ok, why = False, str(exc)
        if not ok:
            out.append(Violation(cid, "domain-name", f"{why}; ingest it again with this "
                                 "version (or another --domain)"))
        elif domain in taken:
            out.append(Violation(cid, "domain-name",
                                 f"domain {domain!r} is also the name of a source's config; "
                                 "ingest it with another domain or build without "
                                 "--split-by-task"))
    return out


def cap_spans(spans: list[BenchmarkSpan], cap: int, seed: int,
              domain_of: Callable[[str], str]) -> tuple[list[BenchmarkSpan], dict[str, Any]]:
    """At most ``cap`` spans per conversation, drawn by ``random.Random(f"{seed}:{id}")`` from
    its spans in file order; and what the cap removed, per domain."""
    by_conv: dict[str, list[BenchmarkSpan]] = defaultdict(list)
    # The cap is on values (the rules propose dozens in a verbose answer); every claim, a
    # person's annotation, is kept, and counts toward no cap.
    kept: list[BenchmarkSpan] = [s for s in spans if s.span_kind is SpanKind.CLAIM]
    for s in spans:
        if s.span_kind is not SpanKind.CLAIM:
            by_conv[s.conversation_id].append(s)
    removed: Counter = Counter()
    capped: Counter = Counter()
    for cid in sorted(by_conv):
        ss = sorted(by_conv[cid], key=lambda s: (s.span.turn, s.span.start, s.span.end, s.id))
        if len(ss) > cap:
            ss = random.Random(f"{seed}:{cid}").sample(ss, cap)
            removed[domain_of(cid)] += len(by_conv[cid]) - cap
            capped[domain_of(cid)] += 1
        kept += ss
    domains = sorted({domain_of(cid) for cid in by_conv})
    return kept, {"max_spans_per_conversation": cap, "seed": seed,
                  "removed": sum(removed.values()),
                  "removed_by_domain": {d: removed[d] for d in domains},
                  "conversations_capped_by_domain": {d: capped[d] for d in domains}}


def rule_of(candidate: Candidate | None) -> str:
    """The rule that proposed a hallucination: its rationale's head, e.g. ``membership
    claim``, ``elapsed-time claim``, ``contradiction``, ``counterfactual``."""
    rationale = (candidate.rationale or "") if candidate else ""
    head = rationale.split(":", 1)[0].strip()
    return head if head and ":" in rationale else "unnamed"


def split_statistics(spans: list[BenchmarkSpan], convs: list[Conversation],
                     cands: list[Candidate] | None) -> dict[str, Any]:
    """What the card of a release split by task adds: the splits per domain, spans by domain x
    agent x type, depth and hops per domain and type, hallucinations by rule."""
    conv = {c.id: c for c in convs}
    types = [t.value for t in DependencyType]
    domains = sorted({c.domain for c in convs})
    splits: dict[str, dict[str, dict[str, int]]] = {}
    for d in domains:
        splits[d] = {}
        for name in SPLITS:
            cs = [c for c in convs if c.domain == d and conversation_split(c.id) == name]
            splits[d][name] = {
                "tasks": len({task_of(c.id) or c.id for c in cs}),
                "conversations": len(cs),
                "spans": sum(1 for s in spans if s.domain == d
                             and conversation_split(s.conversation_id) == name)}
    agents: dict[str, dict[str, dict[str, int]]] = {}
    for s in spans:
        agent = conv[s.conversation_id].agent_model or NO_AGENT
        row = agents.setdefault(s.domain, {}).setdefault(
            agent, dict.fromkeys([*types, SpanOrigin.COUNTERFACTUAL.value], 0))
        # a counterfactual span (a hallucination by construction) is counted apart from the
        # real ones, so that a domain's real types are read off the table
        row[SpanOrigin.COUNTERFACTUAL.value if s.origin is SpanOrigin.COUNTERFACTUAL
            else s.dependency_type.value] += 1
    hops = {d: hops_by_type([s for s in spans if s.domain == d]) for d in domains}
    by_id = {c.id: c for c in cands or []}
    rules: dict[str, dict[str, Any]] = {}
    for s in spans:
        # A claim's hallucination is a person's decision, counted with the claims (below).
        if s.dependency_type is not DependencyType.HALLUCINATION or s.span_kind is SpanKind.CLAIM:
            continue
        rule = rule_of(by_id.get(s.id))
        r = rules.setdefault(rule, {"spans": 0, "by_domain": {}, "origin": s.origin.value
                                    if s.origin is not SpanOrigin.REAL else "real"})
        r["spans"] += 1
        r["by_domain"][s.domain] = r["by_domain"].get(s.domain, 0) + 1
    # A release holds the conversations with a released span; a run with none has nothing
    # to score and is not in it. Real runs and their counterfactual copies are counted apart
    # (a copy is one run edited, not another run).
    real = {s.conversation_id for s in spans if s.origin is SpanOrigin.REAL}
    claims = claim_statistics(spans, conv)
    return {
        **({"claims": claims} if claims else {}),
        "splits": splits,
        "real_conversations": {d: sum(1 for c in convs if c.domain == d and c.id in real)
                               for d in domains},
        "by_domain_agent_type": {d: dict(sorted(agents.get(d, {}).items())) for d in domains},
        "agents": len({c.agent_model for c in convs if c.agent_model}),
        "hops_by_domain": hops,
        "hallucinations_by_rule": _handchecked(rules, spans, by_id),
        "split_rule": SPLIT_RULE,
    }


def claim_statistics(spans: list[BenchmarkSpan], conv: dict[str, Conversation]
                     ) -> dict[str, Any] | None:
    """The claims of a release: by domain x agent x claim kind x type, and who proposed,
    checked and reviewed them (None when the release holds no claim)."""
    claims = [s for s in spans if s.span_kind is SpanKind.CLAIM]
    if not claims:
        return None
    table: dict[str, dict[str, dict[str, dict[str, int]]]] = {}
    for s in claims:
        agent = conv[s.conversation_id].agent_model or "unknown"
        kinds = table.setdefault(s.domain, {}).setdefault(agent, {})
        kinds.setdefault(s.claim_kind.value, dict.fromkeys(
            [t.value for t in DependencyType], 0))[s.dependency_type.value] += 1
    who: Counter[tuple[str, str, str]] = Counter()
    for s in claims:
        proposer = s.annotator.label if s.annotator else "unknown"
        checker = ", ".join(s.reviewers) or "-"
        who[(proposer, checker, s.decision_source.value)] += 1
    return {
        "spans": len(claims),
        "conversations": len({s.conversation_id for s in claims}),
        "by_domain_agent_kind_type": {d: {a: dict(sorted(k.items()))
                                          for a, k in sorted(agents.items())}
                                      for d, agents in sorted(table.items())},
        "who": [{"proposed": p, "checked": c, "decision_source": d, "spans": n}
                for (p, c, d), n in sorted(who.items())],
    }


def _handchecked(rules: dict[str, dict[str, Any]], spans: list[BenchmarkSpan],
                 by_id: dict[str, Candidate]) -> dict[str, dict[str, Any]]:
    """Each rule's released hallucinations with the hand-check of the rules versions the
    release's spans carry (``mtcabench/resources/lineage/handcheck-<version>.json``, any
    version): checked, correct, the share and its 95% Wilson interval. A checked span's rule
    is its ``rule`` in the hand-check file, else that of its candidate."""
    versions = sorted({s.annotator.rules_version for s in spans
                       if s.annotator and s.annotator.rules_version})
    for version in versions:
        check = resources.lineage_handcheck(version)
        for x in (check or {}).get("spans", []):
            # a counterfactual hand-check names no type: every edit is a hallucination
            if x.get("dependency_type", "hallucination") != DependencyType.HALLUCINATION.value:
                continue
            rule = x.get("rule") or rule_of(by_id.get(x["id"]))
            r = rules.setdefault(rule, {"spans": 0, "by_domain": {}, "origin": "real"})
            hc = r.setdefault("handcheck", {})
            v = hc.setdefault(version.split("+")[0], {"checked": 0, "correct": 0,
                                                      "data": check.get("data", "")})
            v["checked"] += 1
            v["correct"] += x["verdict"] == "correct"
    for r in rules.values():
        for v in r.get("handcheck", {}).values():
            v["share"] = round(v["correct"] / v["checked"], 4)
            v["wilson"] = list(wilson(v["correct"], v["checked"]))
    return dict(sorted(rules.items()))
