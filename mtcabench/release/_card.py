"""The dataset card (README.md): the YAML header the Hub and ``datasets`` read, and the prose.

The header carries the configs with their data files, the typed features of each config
(``dataset_info``), the licence of each source, task categories and size category. The body
says what the data is, how to load it, the scores to read results against (floors), how many
spans of each kind it holds, how it was made (recipe) and, plainly, how many of its decisions
were made by a person.
"""

from __future__ import annotations

from collections.abc import Sequence

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
    ReleaseManifest,
)
from mtcabench.graph import RULES
from mtcabench.model import BenchmarkSpan, Conversation, DependencyType
from mtcabench.release._validate import RELEASE_RULES

#: Licence and home of each source we know (a release refuses a source not listed here).
SOURCES: dict[str, dict[str, str]] = {
    "taubench": {"license": "mit", "name": "TauBench (MIT)",
                 "url": "https://github.com/sierra-research/tau-bench"},
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
        c.name: {"data_files": [{"split": SPLIT, "path": c.files}],
                 **({"default": True} if c.name == "spans" else {})}
        for c in manifest.configs
    }).to_dataset_card_data(data)
    infos = {}
    for c in manifest.configs:
        splits = SplitDict()
        splits.add(SplitInfo(name=SPLIT, num_examples=c.rows, num_bytes=table_bytes[c.name]))
        infos[c.name] = DatasetInfo(features=features[c.table], splits=splits,
                                    dataset_size=table_bytes[c.name])
    DatasetInfosDict(infos).to_dataset_card_data(data)
    return data.to_yaml()


def _table(header: list[str], rows: list[list[object]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(str(x) for x in row) + " |" for row in rows]
    return out + [""]


def _pct(n: int, total: int) -> str:
    return f"{100 * n / total:.1f}%" if total else "-"


def _fields(model, extra: dict[str, str]) -> list[str]:
    rows = [[f"`{name}`", (f.description or "").replace("|", "/")]
            for name, f in model.model_fields.items() if name != "kind"]
    rows += [[f"`{k}`", v] for k, v in extra.items()]
    return _table(["field", "meaning"], rows)


def card_body(manifest: ReleaseManifest, floors: Sequence[str] = ()) -> list[str]:
    """The card's prose; ``floors`` is the Floors section (:mod:`mtcabench.release._floors`)."""
    st, rv, rc = manifest.statistics, manifest.review, manifest.recipe
    n = st["spans"]
    v = manifest.version
    lines = [
        f"# MTCABench {v}",
        "",
        "Multi-turn context attribution benchmark: target spans in the assistant turns of "
        "agent conversations with tool calls, each with a gold provenance graph (a DAG over "
        "turn indices, edges `child -> parent` pointing backwards in time) and one of four "
        "dependency types. It is the benchmark of Tokengeist (Tang, Barke and Agarwal, 2026), "
        "built, validated and published with the `mtcabench` tool.",
        "",
        f"This release holds **{n} spans** in **{st['conversations']} conversations**.",
        "",
        "## Provenance of the decisions",
        "",
    ]
    if rv["auto_spans"]:
        lines += [
            f"> **{rv['auto_spans']} of {n} spans ({_pct(rv['auto_spans'], n)}) were accepted "
            "automatically, with no human reviewer.** Their `decision_source` column is "
            "`auto`; filter on `decision_source == \"human\"` for the reviewed gold only. "
            f"Of all {rv['decisions']} decisions, {rv['decisions_by_source']['auto']} were "
            "automatic.",
            "",
        ]
    else:
        lines += [f"Every span was accepted by a human reviewer ({rv['reviewers']} reviewers, "
                  f"{rv['decisions']} decisions); `decision_source` is `human` throughout.", ""]
    lines += [
        "## Loading",
        "",
        "```python",
        "from datasets import load_dataset",
        "",
        '# "ORG/NAME" is the Hub id of this dataset, or the path of this folder',
        'spans = load_dataset("ORG/NAME", "spans", split="test")',
        'conversations = load_dataset("ORG/NAME", "conversations", split="test")',
        "```",
        "",
        "With mtcabench installed, `mtcabench.release.load_release(\"ORG/NAME\")` (or a folder) "
        "returns the records (`Benchmark.conversations`, `Benchmark.spans`) that the "
        "reference evaluator and scorer take.",
        "",
        *floors,
        "## Configurations",
        "",
    ]
    lines += _table(["config", "rows", "what", "files"], [
        [f"`{c.name}`", c.rows,
         ("spans" if c.table == "spans" else "conversations") +
         (f" of {c.source}" if c.source else ", all sources"),
         ", ".join(f"`{f}`" for f in c.files)]
        for c in manifest.configs
    ])
    lines += [
        "Each config has one split, `test`. A span's `conversation_id` is the `id` of a row of "
        "`conversations`; its offsets and graph nodes refer to that conversation's turns.",
        "",
        "### Span fields",
        "",
    ]
    lines += _fields(BenchmarkSpan, {})
    lines += [
        "Graph edges are structs `{child, parent, kind, score, evidence}`; `kind` is "
        "`content` or `structural` (a tool result's link to the turn that issued its call).",
        "",
        "`evidence` says *where in the parent turn* the child's value sits: a `quote` and its "
        "`start`/`end` offsets into the parent's `text`. The scorer's **evidence hit@3** "
        "reads it: a gold content edge with an evidence range is hit when the predicted edge "
        "is there and one of its first three evidence sentences (a submission's optional "
        "`sentences`, best first) overlaps that range; per span, hits over such edges, averaged "
        "over the spans that have one. Structural edges are left out (the call is their "
        "evidence). A method that gives no sentences, like the model-free floors, scores 0 on "
        "it: the right turn for an unknown reason is not credited.",
        "",
        "### Conversation fields",
        "",
    ]
    lines += _fields(Conversation, {})
    lines += [
        "Each turn holds `index`, `role` (system, user, assistant, tool), `content`, `text`, "
        "`tool_calls` (`id`, `name`, `arguments` as JSON text), `tool_call_id` and `name`. "
        "`text` is the canonical text every offset refers to: the content followed, for an "
        "assistant turn, by one line per tool call, `name({\"arg\": ...})`. `metadata` is the "
        "source's run metadata as JSON text.",
        "",
        "## Statistics",
        "",
        "Spans by dependency type and source:",
        "",
    ]
    srcs = sorted(st["by_source"])
    lines += _table(
        ["dependency type", "meaning", *srcs, "all", "share"],
        [[t.value, _TYPE_MEANING[t], *[st["by_type_and_source"][t.value].get(s, 0) for s in srcs],
          st["by_dependency_type"][t.value], _pct(st["by_dependency_type"][t.value], n)]
         for t in DependencyType],
    )
    lines += ["Spans and conversations by source and domain:", ""]
    lines += _table(["source", "spans", "conversations"],
                    [[s, st["by_source"][s], st["conversations_by_source"].get(s, 0)]
                     for s in srcs])
    lines += _table(["source/domain", "spans"], [[k, c] for k, c in st["by_domain"].items()])
    lines += ["Spans by gold depth (longest path from the target, in edges):", ""]
    lines += _table(["depth", "spans", "share"],
                    [[d, c, _pct(c, n)] for d, c in st["by_depth"].items()])
    lines += ["## Review", ""]
    lines += _table(["", "count"], [
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
    ])
    lines += ["How decisions became gold spans:", ""]
    lines += [manifest.selection_rule, ""]
    lines += ["## Recipe", "",
              "Gold graphs were proposed by an LLM annotator in two phases (propose, verify), "
              "checked against the graph rules, then reviewed in Label Studio.", ""]
    ann = rc["annotators"]
    if ann:
        lines += ["Annotators of the released spans:", ""]
        lines += _table(["annotator", "model / rules", "prompt version", "prompt sha256", "spans"], [
            [a.get("name", ""), a.get("model") or a.get("rules_version") or "",
             a.get("prompt_version", ""), f"`{a['prompt_hash']}`" if a.get("prompt_hash") else "",
             a["count"]] for a in ann])
    else:
        lines += ["The review decisions name no annotator.", ""]
    if "candidates" in rc:
        c = rc["candidates"]
        lines += [f"Candidates: {c['total']} produced, {c['passed_checks']} passed the "
                  f"deterministic checks, {c['rejected_by_checks']} were rejected by them.", ""]
        for title, key in (("Proposers (phase 1)", "proposers"), ("Verifiers (phase 2)", "verifiers")):
            if c[key]:
                lines += [f"{title}:", ""]
                lines += _table(["annotator", "model", "prompt version", "prompt sha256", "candidates"], [
                    [a.get("name", ""), a.get("model") or a.get("rules_version") or "",
                     a.get("prompt_version", ""),
                     f"`{a['prompt_hash']}`" if a.get("prompt_hash") else "", a["count"]]
                    for a in c[key]])
    lines += [f"Review: {rc['reviewers']} human reviewers, {rc['decisions']} decisions "
              f"({rc['decisions_by_source']['human']} by a person, "
              f"{rc['decisions_by_source']['auto']} automatic).", ""]
    lines += lineage_section(manifest)
    lines += ["## Sources and licences", "",
              "Each conversation keeps the licence of the dataset it came from:", ""]
    lines += _table(["source", "licence", "upstream"],
                    [[s, manifest.licenses[s], SOURCES[s]["url"]] for s in sorted(manifest.licenses)])
    lines += ["## Validation", "",
              "The release was refused as a whole unless every span passed every rule:", ""]
    lines += [f"- `{k}`: {v}" for k, v in {**RULES, **RELEASE_RULES}.items()] + [""]
    lines += [
        "## Files",
        "",
        f"- `{CHECKSUMS_NAME}`: sha256 of every other file (`sha256sum -c {CHECKSUMS_NAME}`).",
        f"- `{CHANGELOG_NAME}`: what changed against the previous release"
        + (f" ({manifest.previous_version})." if manifest.previous_version else "."),
        f"- `{MANIFEST_NAME}`: this card's numbers, the configs and the build settings, "
        "machine-readable.",
        "",
        f"Built by {manifest.builder}. Data files are reproducible: building again from the "
        "same reviewed decisions and conversations gives byte-identical Parquet files.",
        "",
    ]
    return lines


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
    by_type = manifest.statistics["by_dependency_type"]
    for t in DependencyType:
        checked = [s for s in check["spans"] if s["dependency_type"] == t.value]
        right = sum(1 for s in checked if s["verdict"] == "correct")
        typed = sum(1 for s in checked if s["verdict"] in ("correct", "edge-error"))
        rows.append([t.value, by_type.get(t.value, 0), len(checked), right,
                     _pct(right, len(checked)), _pct(typed, len(checked))])
    return [
        f"Hand-checked precision of `{version}` on {check['data']}; sample: {check['sample']}. "
        "A span is correct when it is of its type and every edge of its graph is right; the "
        "type precision also counts spans of the right type with a wrong edge. The checked "
        f"span ids and verdicts are in `mtcabench/resources/lineage/handcheck-{version}.json`.",
        "",
        *_table(["dependency type", "spans in this release", "hand-checked", "correct",
                 "precision", "type precision"], rows),
    ]


def render_card(manifest: ReleaseManifest, features: dict[str, Features],
                table_bytes: dict[str, int], floors: Sequence[str] = ()) -> str:
    """The whole README.md."""
    header = card_header(manifest, features, table_bytes)
    return "---\n" + header + "\n---\n\n" + "\n".join(card_body(manifest, floors))
