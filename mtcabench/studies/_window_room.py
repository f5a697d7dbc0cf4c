"""The window-room study: shared context windows against a window per turn, on the spans
attributed in a context window (benchmarks/window_policy.py is its command line).

A span past the model's context is attributed in a context window; by default each windowed
turn gets a window of its own (one more set of passes each). With a room
(``TraceSettings.window_room``) a window is fitted that share of the limit below it and the
later turns that still fit share it and its passes. The study computes the default's windowed
units again at each room and compares them with the default's on the windowed spans: what the
room costs in quality against what it saves in forward passes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from mtcabench.studies._results import StudyResult
from mtcabench.studies._tables import compare, diff_ci, md, spans_of, with_ci
from mtcabench.studies._units import Unit


def windowed(result: StudyResult) -> set[str]:
    """The span ids a result attributed in a context window."""
    return set((result.shares or {}).get("windows") or {})


def room_units(units: Sequence[Unit], room: float) -> list[Unit]:
    """The units again at window room ``room`` (setting ``<setting>-room-<room>``)."""
    return [replace(u, setting=f"{u.setting}-room-{room:g}",
                    settings=replace(u.settings, window_room=room)) for u in units]


def _row(label: str, results: Sequence[StudyResult], ids: list[str],
         base: Sequence[StudyResult] | None = None) -> list[str]:
    """One row on the spans ``ids``; against ``base`` (paired) when given."""
    after = spans_of(results, "default", "tokengeist")
    common = [s for s in ids if s in set(after.ids)]
    ref = None if base is None else spans_of(base, "default", "tokengeist").take(common)
    figures, _, conversations = compare(after.take(common), ref)
    edge, source = figures["edge_f1"], figures["source_recall"]
    passes = sum(r.forward_passes for r in results) / len(results)
    return [label, f"{conversations} / {len(common)}", with_ci(edge), diff_ci(edge),
            with_ci(source), diff_ci(source), f"{passes:.2f}"]


def window_room_table(split: str, base: Sequence[StudyResult],
                      by_room: dict[float, Sequence[StudyResult]]) -> str:
    """The default's windowed units (``base``: a window per turn) and each room's, on the spans
    the default attributed in a window."""
    ids = sorted(set().union(*(windowed(r) for r in base)))
    rows = [_row("0 (a window per turn, the default)", base, ids)]
    rows += [_row(f"{room:g}", got, ids, base) for room, got in by_room.items()]
    caption = (f"{split.capitalize()} split, the domains study's conversations with spans past "
               "the model's context (SmolLM2-135M, 8,192 tokens), Tokengeist over average "
               "attention at the default search settings, on the spans attributed in a context "
               "window; each room against a window per turn on the same spans, paired, 95% "
               "conversation-clustered bootstrap intervals (1,000 resamples). Forward passes per "
               "conversation, the pass over the spans within the context included (each unit's "
               "model seconds are in its result file, measured in runs under other loads).")
    lines = md(["window room", "conv. / spans", "edge F1", "difference", "source R",
                "difference", "passes"], rows)
    return "\n".join([caption, "", *lines])
