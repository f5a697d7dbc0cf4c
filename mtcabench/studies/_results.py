"""Result files of the resumable studies: one small JSON file per conversation x scorer x
setting x seed, keyed by a signature of everything that shapes it, written atomically.

A **unit** is what one stretch of model time produces for one conversation: the base scorer's
turn shares of every query the methods may ask (the spans, and for Tokengeist every assistant
turn and call argument), the forward passes and seconds the evaluator reported, and every
span's graph and per-span scores under each *search point* of the study (the default settings,
a scorer's settings tuned on dev). The shares are kept so that a new search point, or a gold
revised after the run, is replayed and rescored without the model
(:func:`mtcabench.studies.replay`, the search trace itself runs).

Keys. ``signature`` hashes what shapes the shares: the result format, the model, the scorer and
its own settings (a weights file by its sha256), the turn aggregate, the token limit, the seed,
the queries asked, and the conversation's fingerprint (the conversation record and its spans'
ids and offsets: the benchmark's part this unit reads). A file whose signature differs is
another setting's result and is recomputed, never reused. ``gold`` hashes the spans' gold
graphs: when only it differs, the shares are replayed and the spans rescored (no model). Each
search point carries the hash of its settings, so a point whose settings changed is replayed
too.

Writes go through :func:`mtcabench.files.atomic_write`: a stop (``kill -9`` included) leaves
either the previous file or the new one, never half of one; a file that does not parse (copied
in torn, say) is reported and recomputed. File names come from the ids through the project's
one name policy (:func:`mtcabench.files.derived_name`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import asdict, fields, is_dataclass
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, Field, ValidationError

from mtcabench.files import atomic_write, derived_name
from mtcabench.io import JSONError, loads
from mtcabench.model import BenchmarkSpan, Conversation, Record

#: Part of every signature: results of another format are recomputed, never read as these.
RESULT_FORMAT = "study-result-v1"
#: Decimals kept of every float written (rounded once, here: floats differ across machines in
#: their last places).
DECIMALS = 6


def rounded(value: float | None) -> float | None:
    return None if value is None else round(float(value), DECIMALS)


def digest(obj: Any) -> str:
    """sha256 of a JSON-able object in its canonical form (sorted keys, no blanks)."""
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def conversation_fingerprint(conversation: Conversation, spans: list[BenchmarkSpan]) -> str:
    """What a unit reads of the benchmark: the conversation and where its spans are."""
    return digest({"conversation": conversation.model_dump(mode="json"),
                   "spans": sorted([s.id, s.span.turn, s.span.start, s.span.end]
                                   for s in spans)})


def gold_fingerprint(spans: list[BenchmarkSpan]) -> str:
    """What the per-span scores read of the gold: each span's graph, sources and type."""
    return digest(sorted([s.id, s.dependency_type.value, sorted(s.sources),
                          s.graph.model_dump(mode="json")] for s in spans))


def settings_record(settings: Any) -> Any:
    """A settings dataclass as plain JSON (a file named by a path field by its sha256 too)."""
    if is_dataclass(settings) and not isinstance(settings, type):
        out = {}
        for f in fields(settings):
            value = getattr(settings, f.name)
            out[f.name] = settings_record(value)
            if f.metadata.get("path") and value and Path(value).is_file():
                out[f.name + "_sha256"] = hashlib.sha256(Path(value).read_bytes()).hexdigest()
        return out
    if isinstance(settings, Mapping):
        return {str(k): settings_record(v) for k, v in settings.items()}
    if isinstance(settings, (list, tuple)):
        return [settings_record(v) for v in settings]
    return settings


class SpanResult(BaseModel):
    """One span under one method and search point."""

    span_id: str
    skipped: str | None = Field(default=None, description="Why the model gave no graph "
                                "(too long for its context): scored as an empty prediction.")
    edges: list[tuple[int, int, float | None]] = Field(
        default_factory=list, description="(child, parent, share); structural edges: no share.")
    score: dict[str, float] = Field(
        description="The span's row of mtcabench.results.metrics.span_matrix by column (the "
                    "counts, then every metric; 0 where a metric is undefined): what `mtcabench "
                    "score` averages and bootstraps.")
    extra: dict[str, float | None] = Field(
        default_factory=dict, description="Study-specific per-span figures (None: undefined), "
                                          "such as original-source recall.")
    lookups: int | None = Field(default=None, description="Queries the search asked for "
                                "this span (the target and each node it expanded): what a run "
                                "of a per-query package pays per span.")


class PointResult(BaseModel):
    """Every span of the unit under one search point, per method."""

    settings: dict[str, Any] = Field(description="The search settings of the point.")
    settings_hash: str
    gold: str = Field(description="gold_fingerprint of the spans when they were scored.")
    methods: dict[str, list[SpanResult]]


class StudyResult(Record):
    """One unit's result file (see the module docstring)."""

    KIND: ClassVar[str] = "study-result"
    VERSION: ClassVar[int] = 1

    split: str
    conversation_id: str
    scorer: str = Field(description="Base scorer; ``model-free`` for the floors.")
    setting: str = Field(description="The unit's label in tables and file names (e.g. K=8).")
    seed: int
    signature: str
    settings: dict[str, Any] = Field(description="Everything the signature hashes.")
    model: str | None
    commit: str = Field(description="The code's git commit (with -dirty for local changes).")
    forward_passes: int = Field(description="As the evaluator reported them for this unit.")
    queries: int = Field(description="Queries the base scorer computed (spans and turns).")
    per_query: bool = Field(default=False, description="The scorer runs its package once per "
                            "query: a flat run pays for the spans' queries only, a per-step run "
                            "for each query its search asked (SpanResult.lookups).")
    spans: int
    seconds: float = Field(description="Model time of the unit (model load excluded).")
    shares: dict[str, Any] | None = Field(
        default=None, description="The turn shares of every query (ShareTables JSON, the max "
                                  "aggregate): what a search point is replayed from.")
    points: dict[str, PointResult] = Field(default_factory=dict)


class ResultStore:
    """The result files of one study under ``root`` (``<root>/<split>/<scorer>/<setting>/
    seed-<n>/<conversation>.json``)."""

    def __init__(self, root: str | Path):
        self.root = Path(root)

    def path(self, split: str, scorer: str | None, setting: str, seed: int,
             conversation_id: str) -> Path:
        return (self.root / split / derived_name(scorer or "model-free")
                / derived_name(setting) / f"seed-{seed}"
                / derived_name(conversation_id, ".json"))

    def read(self, path: Path) -> StudyResult | str:
        """The result at ``path``, or why there is none usable: ``missing`` or ``torn: ...``."""
        if not path.is_file():
            return "missing"
        try:
            return StudyResult.model_validate(loads(path.read_bytes()))
        except (JSONError, ValidationError, UnicodeDecodeError) as exc:
            return f"torn: {str(exc).splitlines()[0][:120]}"

    def write(self, result: StudyResult, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_write(path) as fh:
            fh.write(json.dumps(result.model_dump(mode="json"), ensure_ascii=False,
                                separators=(",", ":")) + "\n")

    def results(self) -> Iterator[tuple[Path, StudyResult]]:
        """Every readable result file, in path order (torn ones are left out: a run redoes
        them)."""
        if not self.root.is_dir():
            return
        for path in sorted(self.root.rglob("*.json")):
            if path.name.startswith("."):
                continue
            got = self.read(path)
            if isinstance(got, StudyResult):
                yield path, got

    def leftovers(self) -> list[Path]:
        """Temporary files a killed writer left (``.NAME.XXXX.tmp``): safe to remove while the
        store is claimed."""
        if not self.root.is_dir():
            return []
        return sorted(p for p in self.root.rglob(".*.tmp") if p.is_file())


def settings_digest(settings: Mapping[str, Any]) -> str:
    return digest(dict(settings))


#: Settings stored only when on (not None, not False): added after results were stored, whose
#: points read as off. The claims' rules are on by default now, so a default point stores them
#: and a point with them off (the search before them) keeps the record it always had.
_WHEN_SET = ("open_alpha", "open_top_k", "open_system", "relay_sentences", "named_values",
             "value_origin")


def point_settings(search) -> dict[str, Any]:
    """A search point's settings as stored (a SearchSettings dataclass)."""
    return {k: v for k, v in asdict(search).items()
            if not (k in _WHEN_SET and (v is None or v is False))}
