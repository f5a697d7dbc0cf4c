"""The plan of the causal-scorer and peers studies: which conversations, scorers, settings and
seeds, as units of :mod:`mtcabench.studies._units` (docs/evaluate.md, "Studies: the plan").

Stages, in order (each resumable; a later one reads what the earlier wrote):

1. **curve**: Tokengeist over ``ablation`` at K = 4, 8, 16, 32 passes and over average
   attention, on the dev sample (seed 0);
2. **K**: the K with the highest dev edge F1 (Tokengeist, default search settings; a tie goes
   to the smaller K) among those of at most :data:`MAX_K` (the issue's 33 passes per
   conversation);
3. **weights**: AT2's per-head weights learned on training-split conversations only
   (:func:`check_training_split` refuses any other file);
4. **dev**: every peers-table scorer on its dev sample (seed 0), for the tuning;
5. **tune**: per scorer and method, the search settings chosen on dev (the parameter study's
   rule, :func:`mtcabench.studies.choose`, on the grid replayed from the stored shares);
6. **test**: every row's scorer on the test sample, the sampling ones over :data:`SEEDS`, each
   replayed at the default settings (the ablation comparison) and at the tuned ones (the
   peers table).

Samples (all spans of each conversation; conversations ranked by the characters of their turns
up to the last span, shortest first, so that the model time fits: a pass costs about its
length): :data:`DEV_CONVERSATIONS` of the dev split, :data:`TEST_CONVERSATIONS` of the test
split, each scorer's row on all of them except where :data:`SAMPLE_OF` says fewer; the ablation
comparison on :data:`COMPARISON_CONVERSATIONS`, the whole test split.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from mtcabench.benchmark import Benchmark
from mtcabench.evaluate import (
    SCORERS,
    AblationSettings,
    AT2Settings,
    AttnTraceSettings,
    SearchSettings,
    TraceSettings,
)
from mtcabench.model import BenchmarkSpan, Conversation
from mtcabench.benchmark import split_of
from mtcabench.studies._split import by_conversation
from mtcabench.studies._units import SearchPoint, Unit

#: The ablation curve's passes per conversation (K ablations + 1 pass).
CURVE_K = (4, 8, 16, 32)
#: The most ablations the test comparison may choose (K + 1 = 33 passes per conversation).
MAX_K = 32
#: Seeds of the scorers that sample (AttnTrace's subsamples, the ablation scorer's masks).
SEEDS = (0, 1, 2)
DEV_CONVERSATIONS = 8
TEST_CONVERSATIONS = 10
#: The ablation scorer's test comparison runs on the whole test split (its 18 conversations
#: with spans, of which the peers' sample is the first 10): the question the studies answer.
COMPARISON_CONVERSATIONS = 18
#: Rows that cost a package call per query run on the first conversations of the samples
#: only (dev: for tuning; test: the row), so that the plan fits its model time.
SAMPLE_OF = {"peer-flashtrace": {"dev": 3, "test": TEST_CONVERSATIONS},
             "peer-contextcite": {"dev": 0, "test": 5}}
#: Scorers tuned on another scorer's dev results (the same estimator through its package).
TUNED_AS = {"peer-contextcite": "ablation"}
ATTNTRACE_SUBSAMPLES = 10
#: FlashTrace's multi-hop setting: its authors' experiments run ``hops=3`` (wbopan/flashtrace,
#: exp/exp4/run_exp.py ``--n_hops``); the package's default is 1.
FLASHTRACE_HOPS = 3
#: AT2 weights: the recipe of docs/evaluate.md on this many training-split conversations of at
#: most this many characters, shortest first.
AT2_CONVERSATIONS, AT2_MAX_CHARS = 8, 9_000
MODEL = "smollm2-135m-instruct"


#: The rows run through the method's own package (once per query), not through mtcabench.
PACKAGES = ("peer-contextcite", "peer-at2", "peer-flashtrace")


def via(scorer: str, method: str) -> str:
    """How a table row's scores were made: mtcabench, or the package (per step under
    Tokengeist, as its package would be run)."""
    if scorer not in PACKAGES:
        return "mtcabench"
    return "its package" + (", per step" if method == "tokengeist" else "")


def length(conversation: Conversation, spans: Sequence[BenchmarkSpan]) -> int:
    """What a unit's model time grows with: the characters of the turns up to the last span."""
    last = max((s.span.turn for s in spans), default=len(conversation.turns) - 1)
    return sum(len(t.text) for t in conversation.turns[: last + 1])


def sample(bench: Benchmark, split: str, n: int) -> list[tuple[Conversation, list[BenchmarkSpan]]]:
    """The ``n`` shortest conversations of ``split`` that hold spans, with all their spans."""
    work = by_conversation(s for s in bench.spans if split_of(s.conversation_id) == split)
    ranked = sorted(work, key=lambda c: (length(bench.conversations[c], work[c]), c))
    return [(bench.conversations[c], work[c]) for c in ranked[:n]]


@dataclass(frozen=True)
class Row:
    """A base-scorer configuration of the peers table (or the curve)."""

    scorer: str
    setting: str
    settings: TraceSettings
    queries: str = "tokengeist"
    seeds: tuple[int, ...] = (0,)

    def at_seed(self, seed: int) -> TraceSettings:
        return replace(self.settings, seed=seed)


def ablation_row(k: int, seeds: tuple[int, ...] = (0,)) -> Row:
    return Row("ablation", f"K={k}", TraceSettings(scorers={"ablation": AblationSettings(
        passes=k)}), seeds=seeds)


AVG = Row("avg-attention", "default", TraceSettings())


def units(study: str, split: str, rows: Sequence[Row],
          chosen: Sequence[tuple[Conversation, list[BenchmarkSpan]]],
          points: Sequence[SearchPoint] | dict[str, Sequence[SearchPoint]] = (SearchPoint("default"),),
          ) -> list[Unit]:
    """Every (row, seed, conversation) unit, conversation-major within a row and seed (so a
    stop leaves whole rows behind it, and the first conversations of every row come first)."""
    out = []
    for row in rows:
        n = SAMPLE_OF.get(row.scorer, {}).get(split, len(chosen))
        pts = points[row.scorer] if isinstance(points, dict) else points
        for seed in row.seeds:
            for conv, spans in chosen[:n]:
                out.append(Unit(study=study, split=split, conversation=conv,
                                spans=tuple(spans), scorer=row.scorer, setting=row.setting,
                                settings=row.at_seed(seed), queries=row.queries,
                                points=tuple(pts), model=MODEL))
    return out


def curve_units(bench: Benchmark) -> list[Unit]:
    """Stage 1: the dev curve (Tokengeist and flat at the default search settings)."""
    rows = [AVG, *(ablation_row(k) for k in CURVE_K)]
    return units("ablation-curve", "dev", rows, sample(bench, "dev", DEV_CONVERSATIONS))


def choose_k(curve: dict[int, float]) -> int:
    """Stage 2: the K of at most :data:`MAX_K` with the highest dev edge F1 (smaller K on a
    tie, compared at 3 decimals: closer than that is noise at this sample size)."""
    allowed = {k: round(v, 3) for k, v in curve.items() if k <= MAX_K}
    if not allowed:
        raise ValueError("no point of the dev curve within the pass budget")
    return max(sorted(allowed), key=lambda k: (allowed[k], -k))


def peer_rows(k: int, weights: Path | None) -> list[Row]:
    """The peers table's base-scorer configurations, given the chosen K and AT2's weights."""
    at2 = TraceSettings(scorers={"at2": AT2Settings(weights=str(weights) if weights else None)})
    flashtrace = SCORERS.get("peer-flashtrace").Settings  # its package is imported when it runs
    return [
        AVG,
        Row("at2", "train-weights", at2),
        Row("attntrace", f"S={ATTNTRACE_SUBSAMPLES}", TraceSettings(scorers={
            "attntrace": AttnTraceSettings(subsamples=ATTNTRACE_SUBSAMPLES)}), seeds=SEEDS),
        ablation_row(k, SEEDS),
        # The package draws the same masks on every run (seeds 0..K-1, no option): one seed.
        Row("peer-contextcite", f"K={k}", TraceSettings(scorers={"ablation": AblationSettings(
            passes=k)})),
        Row("peer-at2", "train-weights", at2),
        Row("peer-flashtrace", f"hops={FLASHTRACE_HOPS}", TraceSettings(scorers={
            "peer-flashtrace": flashtrace(hops=FLASHTRACE_HOPS)}), queries="flat"),
    ]


def tuned_points(tuning: dict[str, dict]) -> dict[str, list[SearchPoint]]:
    """Per scorer: the default point, and the settings tuned on dev for each method (the
    parameters the tuning grid chose over today's defaults: a setting it did not vary, such
    as the claims' rules, stays the default's)."""
    out = {}
    for scorer, methods in tuning.items():
        pts = [SearchPoint("default")]
        for method, chosen in methods.items():
            pts.append(SearchPoint(f"tuned-{method}", SearchSettings(**chosen["search"]), (method,)))
        out[scorer] = pts
    return out


def check_training_split(path: Path) -> list[str]:
    """The conversations an AT2 weights file was learned on (training and held out), all of the
    training split; anything else is an error naming the file and the ids."""
    training = json.loads(Path(path).read_text(encoding="utf-8")).get("training", {})
    ids = [*training.get("conversation_ids", []), *training.get("heldout_conversation_ids", [])]
    if not ids:
        raise ValueError(f"{path}: the weights do not name the conversations they were learned "
                         "on; learn them with the study (benchmarks/peers.py --stage weights)")
    wrong = [c for c in ids if split_of(c) != "train"]
    if wrong:
        raise ValueError(f"{path}: learned on conversations outside the training split: "
                         + ", ".join(f"{c} ({split_of(c) or 'unused'})" for c in wrong))
    return ids
