"""The dataset card (README.md): the YAML header the Hub and ``datasets`` read, and the prose.

The card's layout and fixed prose are a template, ``mtcabench/resources/release/card.md``
(:class:`string.Template`: ``${name}`` is filled, no logic); this module computes what fills
it: the header, the numbers, and the tables and paragraphs that depend on the release.

The header carries the configs with their data files, the typed features of each config
(``dataset_info``), the licence of each source, task categories and size category. The body
says what the data is, how to load it, the scores to read results against (floors), how many
spans of each kind it holds, how it was made (recipe) and, plainly, how many of its decisions
were made by a person.
"""

from __future__ import annotations

from collections.abc import Sequence
from string import Template

from datasets import DatasetInfo, Features, SplitDict, SplitInfo
from datasets.info import DatasetInfosDict
from datasets.utils.metadata import MetadataConfigs
from huggingface_hub import DatasetCardData

from mtcabench import resources
from mtcabench.benchmark import (
    CHANGELOG_NAME,
    CHECKSUMS_NAME,
    MANIFEST_NAME,
    SPLIT,
    SPLITS,
    ReleaseManifest,
)
from mtcabench.graph import RULES
from mtcabench.model import BenchmarkSpan, Conversation, DependencyType
from mtcabench.release._validate import RELEASE_RULES
from mtcabench.terminal import markdown, markdown_code

#: Licence and home of each source we know (a release refuses a source not listed here).
SOURCES: dict[str, dict[str, str]] = {
    "taubench": {"license": "mit", "name": "TauBench (MIT)",
                 "url": "https://github.com/sierra-research/tau-bench"},
    "tau2": {"license": "mit", "name": "tau2-bench (MIT)",
             "url": "https://github.com/sierra-research/tau2-bench"},
    "confetti": {"license": "cc-by-4.0", "name": "ConFETTI (CC BY 4.0)",
                 "url": "https://github.com/amazon-science/confetti"},
}

_TYPE_MEANING = {
    DependencyType.DIRECT: "depends on exogenous turns only, in one hop",
    DependencyType.CHAINED: "passes through one or more intermediate assistant turns",
    DependencyType.MULTI_SOURCE: "combines two or more independent sources",
    DependencyType.HALLUCINATION: "unsupported or wrong; the graph holds the turns that primed it",
}


def size_category(n: int) -> str:
    for bound, label in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"),
                         (1_000_000, "100K<n<1M")):
        if n < bound:
            return label
    return "n>1M"


def card_header(manifest: ReleaseManifest, features: dict[str, Features],
                table_bytes: dict[str, int]) -> str:
    """The YAML header (without the ``---`` fences)."""
    sources = sorted(manifest.licenses)
    auto = manifest.review["auto_spans"] > 0
    human = manifest.review["human_spans"] > 0
    data = DatasetCardData(
        pretty_name=f"MTCABench {manifest.version}",
        language=["en"],
        license=[manifest.licenses[s] for s in sources],
        annotations_creators=(["machine-generated"] if auto else [])
        + (["expert-generated"] if human else []),
        language_creators=["machine-generated"],
        multilinguality=["monolingual"],
        size_categories=[size_category(manifest.statistics["spans"])],
        task_categories=["text-generation", "other"],
        tags=["context-attribution", "provenance", "multi-turn", "tool-use", "agents",
              "tokengeist", "mtcabench"],
    )
    MetadataConfigs({
        c.name: {"data_files": [{"split": k, "path": v} for k, v in c.split_files().items()],
                 **({"default": True} if c.name == "spans" else {})}
        for c in manifest.configs
    }).to_dataset_card_data(data)
    infos = {}
    for c in manifest.configs:
        splits = SplitDict()
        if c.splits is None:
            splits.add(SplitInfo(name=SPLIT, num_examples=c.rows,
                                 num_bytes=table_bytes[c.name]))
        for sp in c.splits or []:
            splits.add(SplitInfo(name=sp.name, num_examples=sp.rows,
                                 num_bytes=table_bytes[f"{c.name}/{sp.name}"]))
        infos[c.name] = DatasetInfo(features=features[c.table], splits=splits,
                                    dataset_size=table_bytes[c.name])
    DatasetInfosDict(infos).to_dataset_card_data(data)
    return data.to_yaml()


class Markup(str):
    """A table cell the card writes as Markdown (a backticked name of ours, a list of files);
    every other cell is data, escaped (:func:`~mtcabench.terminal.markdown`)."""


def _cell(value: object) -> str:
    if isinstance(value, Markup):
        return str(value)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return markdown(value)


def _code(value: object) -> Markup:
    """A name from the data, as inline code (escaped text where backticks cannot hold it)."""
    return Markup(markdown_code(value))


def _table(header: list[str], rows: list[list[object]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(_cell(x) for x in row) + " |" for row in rows]
    return out + [""]


def _pct(n: int, total: int) -> str:
    return f"{100 * n / total:.1f}%" if total else "-"


def _fields(model, extra: dict[str, str], leave_out: Sequence[str] = ()) -> list[str]:
    rows = [[Markup(f"`{name}`"), Markup((f.description or "").replace("|", "/"))]
            for name, f in model.model_fields.items() if name not in ("kind", *leave_out)]
    rows += [[Markup(f"`{k}`"), Markup(v)] for k, v in extra.items()]
    return _table(["field", "meaning"], rows)


def _block(lines: Sequence[str]) -> str:
    """Lines for a ``${name}`` of the card template that stands at the start of a line: each
    line with its line break, so that an empty block leaves no blank line."""
    return "".join(line + "\n" for line in lines)


def _annotator_rows(annotators: list[dict]) -> list[list[object]]:
    return [[a.get("name", ""), a.get("model") or a.get("rules_version") or "",
             a.get("prompt_version", ""),
             _code(a["prompt_hash"]) if a.get("prompt_hash") else "", a["count"]]
            for a in annotators]


def _provenance(manifest: ReleaseManifest) -> list[str]:
    rv, n = manifest.review, manifest.statistics["spans"]
    if rv["auto_spans"]:
        return [
            f"> **{rv['auto_spans']} of {n} spans ({_pct(rv['auto_spans'], n)}) were accepted "
            "automatically, with no human reviewer.** Their `decision_source` column is "
            "`auto`; filter on `decision_source == \"human\"` for the reviewed gold only. "
            f"Of all {rv['decisions']} decisions, {rv['decisions_by_source']['auto']} were "
            "automatic.",
        ]
    return [f"Every span was accepted by a human reviewer ({rv['reviewers']} reviewers, "
            f"{rv['decisions']} decisions); `decision_source` is `human` throughout."]


def _recipe_annotators(manifest: ReleaseManifest) -> tuple[list[str], list[str]]:
    """The annotators of the released spans, and the candidates' proposers and verifiers."""
    rc = manifest.recipe
    ann = rc["annotators"]
    annotators = ["Annotators of the released spans:", "", *_table(
        ["annotator", "model / rules", "prompt version", "prompt sha256", "spans"],
        _annotator_rows(ann))] if ann else ["The review decisions name no annotator.", ""]
    candidates: list[str] = []
    if "candidates" in rc:
        c = rc["candidates"]
        candidates += [f"Candidates: {c['total']} produced, {c['passed_checks']} passed the "
                       f"deterministic checks, {c['rejected_by_checks']} were rejected by them.",
                       ""]
        for title, key in (("Proposers (phase 1)", "proposers"),
                           ("Verifiers (phase 2)", "verifiers")):
            if c[key]:
                candidates += [f"{title}:", "", *_table(
                    ["annotator", "model", "prompt version", "prompt sha256", "candidates"],
                    _annotator_rows(c[key]))]
    return annotators, candidates


def card_values(manifest: ReleaseManifest, floors: Sequence[str] = ()) -> dict[str, str]:
    """What fills the card template's ``${name}``s: numbers, and the tables and the
    paragraphs that depend on the release, as Markdown."""
    st, rv, rc = manifest.statistics, manifest.review, manifest.recipe
    n = st["spans"]
    srcs = sorted(st["by_source"])
    annotators, candidates = _recipe_annotators(manifest)
    return {
        "version": manifest.version,
        "spans": str(n),
        "conversations": str(st["conversations"]),
        "provenance": _block(_provenance(manifest)),
        "floors": _block(floors),
        "configurations": _block(_configurations(manifest)),
        "split_rule": _split_rule(manifest),
        "domains": _block(domain_sections(st)),
        # origin and counterfactual are columns only of releases holding counterfactual spans
        "span_fields": _block(_fields(BenchmarkSpan, {}, () if "by_origin" in st
                                      else ("origin", "counterfactual"))),
        "types_and_hops": _block(_types_and_hops(st)),
        "origins": _block(_origins(st, manifest)),
        "conversation_fields": _block(_fields(Conversation, {})),
        "by_type": _block(_table(
            ["dependency type", "meaning", *srcs, "all", "share"],
            [[t.value, _TYPE_MEANING[t],
              *[st["by_type_and_source"][t.value].get(s, 0) for s in srcs],
              st["by_dependency_type"][t.value], _pct(st["by_dependency_type"][t.value], n)]
             for t in DependencyType])),
        "by_source": _block(_table(["source", "spans", "conversations"],
                                   [[s, st["by_source"][s], st["conversations_by_source"].get(s, 0)]
                                    for s in srcs])),
        "by_domain": _block(_table(["source/domain", "spans"],
                                   [[k, c] for k, c in st["by_domain"].items()])),
        "by_depth": _block(_table(["depth", "spans", "share"],
                                  [[d, c, _pct(c, n)] for d, c in st["by_depth"].items()])),
        "review": _block(_table(["", "count"], [
            ["spans reviewed", rv["reviewed_spans"]],
            ["spans released (accepted)", rv["released_spans"]],
            ["spans rejected", rv["rejected_spans"]],
            ["acceptance rate", _pct(rv["released_spans"], rv["reviewed_spans"])],
            ["released with edits", rv["edited_spans"]],
            ["edit rate (of released)", _pct(rv["edited_spans"], rv["released_spans"])],
            ["spans where voters disagreed", rv["split_spans"]],
            ["decisions", rv["decisions"]],
            ["decisions by a person", rv["decisions_by_source"]["human"]],
            ["decisions made automatically", rv["decisions_by_source"]["auto"]],
            ["released spans decided by a person", rv["human_spans"]],
            ["released spans accepted automatically", rv["auto_spans"]],
            ["human reviewers", rv["reviewers"]],
        ])),
        "selection_rule": manifest.selection_rule,
        "annotators": _block(annotators),
        "candidates": _block(candidates),
        "reviewers": str(rc["reviewers"]),
        "decisions": str(rc["decisions"]),
        "human_decisions": str(rc["decisions_by_source"]["human"]),
        "auto_decisions": str(rc["decisions_by_source"]["auto"]),
        "lineage": _block(lineage_section(manifest)),
        "licences": _block(_table(["source", "licence", "upstream"],
                                  [[s, manifest.licenses[s], SOURCES[s]["url"]]
                                   for s in sorted(manifest.licenses)])),
        "rules": _block([f"- `{k}`: {v}" for k, v in {**RULES, **RELEASE_RULES}.items()]),
        "checksums_name": CHECKSUMS_NAME,
        "changelog_name": CHANGELOG_NAME,
        "manifest_name": MANIFEST_NAME,
        "previous": f" ({manifest.previous_version})" if manifest.previous_version else "",
        "builder": manifest.builder,
    }


def _configurations(manifest: ReleaseManifest) -> list[str]:
    """The configs table: with a column of rows per split in a release split by task."""
    def what(c) -> str:
        if c.name == "claims":
            return "claims (spans whose `span_kind` is `claim`; also in `spans` and `all`)"
        return (("spans" if c.table == "spans" else "conversations")
                + (f" of {c.source}" if c.source else ", all sources"))

    if not any(c.splits for c in manifest.configs):
        return _table(["config", "rows", "what", "files"], [
            [_code(c.name), c.rows, what(c), Markup(", ".join(markdown_code(f) for f in c.files))]
            for c in manifest.configs])
    domains = set(manifest.statistics.get("splits", {}))

    def what2(c) -> str:
        base = c.name.removesuffix("-conversations")
        if base in domains:
            return f"{c.table} of the {base} domain"
        return what(c)

    return _table(["config", "rows", *SPLITS, "what"], [
        [_code(c.name), c.rows,
         *[next((sp.rows for sp in c.splits or [] if sp.name == name), 0) for name in SPLITS],
         what2(c)] for c in manifest.configs])


def _split_rule(manifest: ReleaseManifest) -> str:
    """The sentence after the configs table: the one split, or the split by task."""
    if not any(c.splits for c in manifest.configs):
        return "Each config has one split, `test`."
    return (manifest.statistics.get("split_rule", "") + " The data files are cut by source, "
            "domain and split: `data/<spans|conversations>/<source>/<domain>-<split>.parquet`.")


def context_section(st: dict) -> list[str]:
    """Per domain, the spans whose conversation up to their end passes the default model's
    context (attributed in a context window by ``mtcabench trace``), or why not counted."""
    ctx = st.get("context")
    if ctx is None:
        return []
    head = ["### Spans past the model's context", ""]
    if not ctx.get("computed"):
        return [*head, f"Not computed for this release: {ctx['why']}.", ""]
    rows = [[d, r["spans"], r["past"], _pct(r["past"], r["spans"])]
            for d, r in ctx["by_domain"].items()]
    total = sum(r["spans"] for r in ctx["by_domain"].values())
    past = sum(r["past"] for r in ctx["by_domain"].values())
    return [*head, f"Spans whose conversation up to the span's end passes the "
            f"{ctx['limit']:,}-token context of {ctx['model']} (the evaluator's default model): "
            f"{past} of {total} ({_pct(past, total)}). `mtcabench trace` attributes them in a "
            "context window (earlier turns' content shortened, tool results first; each "
            "prediction line records its window), and skips a span only when no window fits "
            "(docs/evaluate.md, *Long conversations*).", "",
            *_table(["source/domain", "spans", "past the context", "share"], rows)]


def claims_section(cl: dict) -> list[str]:
    """The claims: counts by domain x agent x claim kind x type, and who proposed, checked and
    reviewed them."""
    types = [t.value for t in DependencyType]
    return [
        "### Claims by domain, agent model, claim kind and type", "",
        f"**{cl['spans']} claims** in {cl['conversations']} conversations (the `claims` "
        "config; a claim is a clause asserting what the agent concluded, which no turn holds "
        "verbatim: see mtcabench's docs/claims.md for the guide they were annotated by).", "",
        *_table(["domain", "agent model", "claim kind", *types, "all"],
                [[d, _code(a), k, *[row[t] for t in types], sum(row.values())]
                 for d, agents in cl["by_domain_agent_kind_type"].items()
                 for a, kinds in agents.items() for k, row in kinds.items()]),
        "Who proposed each claim's graph (`annotator`), who checked it edge by edge "
        "(`reviewers`: never its annotator) and how the decision was made "
        "(`decision_source`), as every claim's row states:", "",
        *_table(["proposed by", "checked by", "decision", "claims"],
                [[_code(w["proposed"]), w["checked"], w["decision_source"], w["spans"]]
                 for w in cl["who"]])]


def domain_sections(st: dict) -> list[str]:
    """A release split by task: splits per domain, the cap, spans by domain x agent x type,
    depth and hops per domain, hallucinations by rule with their hand-check; the spans past
    the model's context, where counted."""
    out: list[str] = []
    if "splits" in st:
        out += ["### Splits by domain", "", *_table(
            ["domain", "split", "tasks", "conversations", "spans"],
            [[d, name, v["tasks"], v["conversations"], v["spans"]]
             for d, by in st["splits"].items() for name, v in by.items()])]
        if "real_conversations" in st:
            real = st["real_conversations"]
            out += [f"The conversations are those with a released span: **{sum(real.values())} "
                    "real runs** (" + ", ".join(f"{markdown(d)} {n}" for d, n in real.items()) + ") and "
                    f"{st['conversations'] - sum(real.values())} counterfactual copies of them. "
                    "A run with no span (nothing in it that the rules decide) is not in the "
                    "release: it has nothing to score.", ""]
    if "cap" in st:
        cap = st["cap"]
        out += ["### Cap per conversation", "",
                f"At most **{cap['max_spans_per_conversation']} spans per conversation** are "
                "released, so that a verbose conversation that repeats its values does not "
                "outweigh its domain: where a conversation has more, that many are drawn by "
                f"`random.Random(\"{cap['seed']}:<conversation id>\").sample` from its spans "
                f"in text order. The cap removed {cap['removed']} spans:", "",
                *_table(["domain", "conversations capped", "spans removed"],
                        [[d, cap["conversations_capped_by_domain"][d], n]
                         for d, n in cap["removed_by_domain"].items()])]
    if "by_domain_agent_type" in st:
        types = [t.value for t in DependencyType] + ["counterfactual"]
        out += ["### Spans by domain, agent model and type", "",
                f"{st['agents']} agent models in {len(st['by_domain_agent_type'])} domains. "
                "The four types count real spans; `counterfactual` counts the counterfactual "
                "spans (hallucinations made by an edit) apart.", "",
                *_table(["domain", "agent model", *types, "all"],
                        [[d, _code(a), *[row[t] for t in types], sum(row.values())]
                         for d, agents in st["by_domain_agent_type"].items()
                         for a, row in agents.items()])]
    if "claims" in st:
        out += claims_section(st["claims"])
    if "hops_by_domain" in st:
        def spread(v: list[int]) -> str:
            return f"{v[1]} ({v[0]}-{v[2]})" if v else "-"

        out += ["### Depth by domain: content hops beside call hops", "", *_table(
            ["domain", "dependency type", "spans", "depth", "content hops",
             "call-structure hops"],
            [[d, t, h["spans"], spread(h["depth"]), spread(h["content_hops"]),
              spread(h["structural_hops"])]
             for d, by in st["hops_by_domain"].items() for t, h in by.items() if h["spans"]]),
            "Median (least-most) of the gold paths, as in the table by type above.", ""]
    if "hallucinations_by_rule" in st:
        out += hallucination_rules(st["hallucinations_by_rule"])
    return out + context_section(st)


def hallucination_rules(rules: dict[str, dict]) -> list[str]:
    """Hallucination spans by the rule that decided them, with the hand-checked share and its
    95% Wilson interval from each rules version's hand-check file."""
    rows = []
    for rule, r in rules.items():
        checks = r.get("handcheck") or {"": None}
        for version, v in checks.items():
            rows.append([rule, r["origin"], r["spans"],
                         ", ".join(f"{d} {n}" for d, n in r["by_domain"].items()) or "-",
                         _code(version) if version else "-",
                         f"{v['correct']}/{v['checked']}" if v else "not checked",
                         f"{100 * v['share']:.1f}%" if v else "-",
                         f"{100 * v['wilson'][0]:.1f}%-{100 * v['wilson'][1]:.1f}%" if v else "-"])
    read = {version: v.get("data", "") for r in rules.values()
            for version, v in (r.get("handcheck") or {}).items()}
    return ["### Hallucinations by rule", "",
            "Each hallucination span was decided by an exact rule (its candidate's rationale "
            "names it); the hand-check files of the rules versions "
            "(`mtcabench/resources/lineage/handcheck-<version>.json`) give the share of checked "
            "spans found correct and its 95% Wilson interval.", "",
            *_table(["rule", "origin", "spans", "by domain", "hand-check", "correct", "share",
                     "95% Wilson interval"], rows),
            *([*[f"- `{version}` was checked on: {data}" for version, data in
                 sorted(read.items())], ""] if read else [])]


#: The type rule, with one example of each type from the TauBench airline runs (gpt-4o):
#: what the card states beside the table of depths and hops.
TYPE_RULE = [
    "The type is read from the gold graph at the target: **hallucination** when the span "
    "contradicts the context (its graph holds the turns that primed the wrong value), "
    "**multi-source** when it joins two or more independent sources, **chained** when a "
    "parent of the target is an assistant turn (the value passed through the agent's own "
    "earlier turn), else **direct** (its parents are exogenous turns: user, system, tool "
    "results). The type says where the value was read; the depth (the longest path from the "
    "target, in edges) says how far back its sources lie, and the hops split that path into "
    "*content* hops (the child's content depends on the parent's) and *call-structure* hops "
    "(a tool result's link to the turn that issued its call). Examples (conversation "
    "`taubench/airline/gpt-4o/<task>/<trial>`, turn):",
    "",
    "- direct, depth 6 = 4 content + 2 structural: \"Your reservation FQ8APE ...\" "
    "(task-5/trial-0, 16) -> the retrieval 15 -> its call 14 -> the listing 6 the call took "
    "the id from -> the profile 5 -> its call 4 -> the user's id 3;",
    "- chained: \"Departure: 07:00 PM\" (task-0/trial-0, 30) -> the agent's listing 14, "
    "which read it from the search result 13;",
    "- multi-source: \"flights from New York (JFK) to Seattle (SEA) on May 20th\" "
    "(task-0/trial-0, 10): the airports from the search result 9, the date from the user 1;",
    "- hallucination: \"it's within 24 hours of booking\" (task-25/trial-0, 8): the "
    "reservation's `created_at` (7) is 2024-05-12T09:36:29 and the policy's current time (0) "
    "2024-05-15 15:00; the graph holds both and the call that fetched the reservation.",
    "",
]


def _types_and_hops(st: dict) -> list[str]:
    hops = st.get("hops_by_type")
    if not hops:
        return []

    def spread(v: list[int]) -> str:
        return f"{v[1]} ({v[0]}-{v[2]})" if v else "-"

    return [*TYPE_RULE, *_table(
        ["dependency type", "spans", "depth", "content hops", "call-structure hops"],
        [[t, h["spans"], spread(h["depth"]), spread(h["content_hops"]),
          spread(h["structural_hops"])] for t, h in hops.items()]),
        "Median (least-most) of the gold paths of each type; the path is the longest one "
        "from the target, of those the one with the most content hops.", ""]


def _origins(st: dict, manifest: ReleaseManifest) -> list[str]:
    """Real and counterfactual spans apart (only in a release holding counterfactuals)."""
    if "by_origin" not in st:
        return []
    checked: list[str] = []
    for a in manifest.recipe["annotators"]:
        check = (resources.lineage_handcheck(a["rules_version"])
                 if a.get("name") == "counterfactual" and a.get("rules_version") else None)
        if check:
            k = sum(1 for x in check["spans"] if x["verdict"] == "correct")
            n = len(check["spans"])
            lo, hi = wilson(k, n)
            checked += [f"Checked by hand (`{a['rules_version']}`, {check['sample']}): {k}/{n} "
                        "edits are plain wrong values of their answers, primed by the graph's "
                        f"source (95% Wilson interval {100 * lo:.1f}%-{100 * hi:.1f}%; "
                        f"`mtcabench/resources/lineage/handcheck-{a['rules_version']}.json`).",
                        ""]
    by, cf = st["by_origin"], st["counterfactual"]
    types = [t.value for t in DependencyType]
    return [
        "### Real and counterfactual spans", "",
        f"{cf['spans']} spans are **counterfactual** (`origin == \"counterfactual\"`): in "
        f"{cf['conversations_edited']} real conversations a value of an answer was replaced "
        "by the value of the same field that an earlier turn gives for another entity "
        "(another flight's number or price in the same search result, another passenger's "
        "birth date, another reservation id). Each is a conversation of its own (the real one "
        "up to the edited answer; `metadata.counterfactual_of` names it), the span is the "
        "replacement, its type is hallucination, its gold graph the turn that primed it (by "
        "the lineage edge rule) and that turn's sources, and `counterfactual` holds the edit. "
        "Read scores on them apart from the real spans: `mtcabench score` reports every "
        "metric by origin.", "",
        *checked,
        *_table(["origin", *types, "all"],
                [[o, *[by[o][t] for t in types], sum(by[o].values())] for o in by]),
        "Counterfactual spans by field edited:", "",
        *_table(["field", "spans"], [[_code(k), v] for k, v in cf["by_field"].items()]),
        "Counterfactual spans by gold depth:", "",
        *_table(["depth", "spans"], [[d, v] for d, v in cf["by_depth"].items()]),
    ]


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval (95%) of a proportion k/n, rounded to 3 places."""
    if n == 0:
        return (0.0, 1.0)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * ((p * (1 - p) / n + z * z / (4 * n * n)) ** 0.5) / (1 + z * z / n)
    return (round(max(0.0, centre - half), 3), round(min(1.0, centre + half), 3))


def _lineage_versions(manifest: ReleaseManifest) -> dict[str, int]:
    """Rules version -> released spans, for every lineage annotator of the release."""
    return {a["rules_version"]: a["count"] for a in manifest.recipe["annotators"]
            if a.get("name") == "lineage" and a.get("rules_version")}


def lineage_section(manifest: ReleaseManifest) -> list[str]:
    """The lineage rules the released spans carry, stated, with their hand-checked precision
    per dependency type (mtcabench/resources/lineage/): so that a reader of the gold knows the
    convention its edges follow and how often it was found right."""
    versions = _lineage_versions(manifest)
    if not versions:
        return []
    lines: list[str] = []
    for version, count in sorted(versions.items()):
        base = version.split("+")[0]
        lines += [f"## Lineage rules `{version}`", "",
                  f"{count} released spans were proposed by the lineage annotator with rules "
                  f"`{version}`" + (f" (the rules `{base}` with other settings; the manifest "
                                    "lists them)" if base != version else "") + ".", ""]
        statement = resources.lineage_rules(base)
        lines += [statement.strip(), ""] if statement else [
            f"No statement of the rules `{base}` ships with this version of mtcabench.", ""]
        lines += _handcheck_lines(base, manifest)
    return lines


def _handcheck_lines(version: str, manifest: ReleaseManifest) -> list[str]:
    check = resources.lineage_handcheck(version)
    if not check:
        return [f"The rules `{version}` have no hand-checked sample.", ""]
    rows = []
    # the rules' own spans: counterfactual spans are made by edits, not by these rules
    by_type = (manifest.statistics.get("by_origin", {}).get("real")
               or manifest.statistics["by_dependency_type"])
    for t in DependencyType:
        checked = [s for s in check["spans"] if s["dependency_type"] == t.value]
        right = sum(1 for s in checked if s["verdict"] == "correct")
        typed = sum(1 for s in checked if s["verdict"] in ("correct", "edge-error"))
        rows.append([t.value, by_type.get(t.value, 0), len(checked), right,
                     _pct(right, len(checked)), _pct(typed, len(checked))])
    real = [x for x in check["spans"] if x["dependency_type"] == DependencyType.HALLUCINATION.value]
    extra: list[str] = []
    if check.get("report_hallucination_interval") and real:
        k = sum(1 for x in real if x["verdict"] == "correct")
        lo, hi = wilson(k, len(real))
        extra = [f"Real hallucination spans: {k}/{len(real)} correct, precision "
                 f"{_pct(k, len(real))} (95% Wilson interval {100 * lo:.1f}%-{100 * hi:.1f}%); "
                 "every one was checked by reading its conversation, and where the task's "
                 "ground truth (`info.task.actions`) bears on the claim it is named in the "
                 "check's reason.", ""]
    return [
        f"Hand-checked precision of `{version}` on {check['data']}; sample: {check['sample']}. "
        "A span is correct when it is of its type and every edge of its graph is right; the "
        "type precision also counts spans of the right type with a wrong edge. The checked "
        f"span ids and verdicts are in `mtcabench/resources/lineage/handcheck-{version}.json`.",
        "",
        *_table(["dependency type", "spans in this release", "hand-checked", "correct",
                 "precision", "type precision"], rows),
        *extra,
    ]


def render_card(manifest: ReleaseManifest, features: dict[str, Features],
                table_bytes: dict[str, int], floors: Sequence[str] = ()) -> str:
    """The whole README.md: the card template (``mtcabench/resources/release/card.md``)
    filled with the YAML header and :func:`card_values`."""
    values = {"header": card_header(manifest, features, table_bytes),
              **card_values(manifest, floors)}
    return Template(resources.card_template()).substitute(values)
