"""A study's model units (mtcabench.studies): the graphs a unit stores are trace's, its passes
are the evaluator's count, and a resumed run loads no model (real model, the sample)."""

from __future__ import annotations

import pytest

from mtcabench.benchmark import load_benchmark
from mtcabench.evaluate import AblationSettings, TraceSettings, load_attributor, trace_conversation
from mtcabench.studies import Models, ResultStore, Unit, run_units

pytestmark = pytest.mark.model


class NoModel(Models):
    def get(self, name):
        raise AssertionError(f"the model {name} was loaded")


@pytest.mark.parametrize("scorer, settings", [
    ("avg-attention", TraceSettings()),
    ("ablation", TraceSettings(seed=1, scorers={"ablation": AblationSettings(passes=4)})),
])
def test_units_store_traces_graphs_and_its_passes(loaded, sample_benchmark, tmp_path, scorer,
                                                  settings):
    bench = load_benchmark(sample_benchmark)
    by_conv = bench.spans_by_conversation()
    units = [Unit("test", "test", bench.conversations[c], tuple(by_conv[c]), scorer, "x",
                  settings) for c in sorted(by_conv)]
    store = ResultStore(tmp_path / "units")
    summary = run_units(units, store, models=Models(loaded=loaded), log=lambda _: None,
                        commit="abc")
    assert summary.computed == 3
    for unit, result in zip(units, summary.results):
        # trace of the same conversation, the same settings (no evidence: the study stores
        # edges, and evidence never changes which edges are chosen)
        att = load_attributor(loaded, scorer, settings)
        traced = trace_conversation(att, unit.conversation, list(unit.spans),
                                    ["tokengeist", "flat"], settings)
        # (the sink probe counts where it runs: once per process for the sample's one policy)
        assert abs(result.forward_passes - traced.forward_passes) <= 1
        assert traced.forward_passes > 0
        for method in ("tokengeist", "flat"):
            got = result.points["default"].methods[method]
            for entry, span in zip(traced.entries[method], got):
                assert span.span_id == entry.span_id
                assert [(c, p) for c, p, _ in span.edges] == [(e.child, e.parent)
                                                              for e in entry.edges]
                for (*_, share), e in zip(span.edges, entry.edges):
                    assert (share is None) == (e.score is None)
                    assert share is None or share == pytest.approx(e.score, abs=1e-6)
        assert result.queries >= len(unit.spans) and result.seconds > 0
    again = run_units(units, store, models=NoModel(), log=lambda _: None, commit="abc")
    assert (again.done, again.computed) == (3, 0)


def test_replay_only_replays_a_changed_point_and_leaves_what_needs_the_model(
        loaded, sample_benchmark, tmp_path):
    """A table-only run after a default changed: the stored shares give the new point without
    the model; a unit never computed is left, not computed."""
    from mtcabench.evaluate import SearchSettings
    from mtcabench.studies import SearchPoint

    bench = load_benchmark(sample_benchmark)
    by_conv = bench.spans_by_conversation()
    convs = sorted(by_conv)
    units = [Unit("test", "test", bench.conversations[c], tuple(by_conv[c]), "avg-attention",
                  "x") for c in convs]
    store = ResultStore(tmp_path / "units")
    run_units(units[:2], store, models=Models(loaded=loaded), log=lambda _: None, commit="abc")
    top1 = (SearchPoint("default", SearchSettings(top_k=1, open_system=None)),)
    changed = [Unit(u.study, u.split, u.conversation, u.spans, u.scorer, u.setting,
                    points=top1) for u in units]
    lines: list[str] = []
    summary = run_units(changed, store, models=NoModel(), log=lines.append, commit="abc",
                        replay_only=True)
    assert (summary.replayed, summary.left, summary.computed) == (2, 1, 0)
    assert not changed[2].path(store).exists()
    assert any(line.endswith("left (missing; needs the model)") for line in lines)
    turn = {s.id: s.span.turn for s in bench.spans}
    for result in summary.results:
        assert result.points["default"].settings["top_k"] == 1
        for span in result.points["default"].methods["flat"]:
            assert len(span.edges) <= 1 and all(c == turn[span.span_id] for c, _, _ in span.edges)
