"""The studies' tables, intervals and curve, regenerated from committed result files alone
(tests/studies/results/: hand-made on the sample by tests/support/study_results.py), and the
AT2 weights' check that they were learned on training conversations only."""

from __future__ import annotations

import json
import re
import shutil
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from mtcabench.results.metrics import columns
from mtcabench.studies import ResultStore, check_training_split, choose_k, split_of, write_tables
from mtcabench.studies._studies import MARKERS, RESULTS
from tests.support import study_results
from tests.support.paths import ROOT


@pytest.fixture()
def results(tmp_path) -> Path:
    copy = tmp_path / "results"
    shutil.copytree(study_results.COMMITTED, copy)
    return copy


def stored_mean(root: Path, split: str, scorer: str, setting: str, point: str, method: str,
                column: str) -> float:
    """The macro average straight from the files: a span's value averaged over its seeds."""
    per_span: dict[str, list[float]] = {}
    for _, r in ResultStore(root / "units").results():
        if (r.split, r.scorer, r.setting) == (split, scorer, setting):
            for s in r.points[point].methods[method]:
                per_span.setdefault(s.span_id, []).append(s.score[column])
    return float(np.mean([np.mean(v) for v in per_span.values()]))


def stored_mean_sink(root: Path, variant: str, column: str) -> float:
    values = [s.score[column] for _, r in ResultStore(root / "sink").results()
              if r.setting == variant for s in r.points["default"].methods["tokengeist"]]
    return float(np.mean(values))


def cells(table: str, label: str) -> list[str]:
    line = next(x for x in table.splitlines() if x.startswith(f"| {label} |"))
    return [c.strip() for c in line.strip("|").split("|")]


def test_the_committed_results_are_what_the_generator_writes(tmp_path):
    study_results.write(tmp_path / "again", tmp_path / "bench")
    committed = sorted(p.relative_to(study_results.COMMITTED)
                       for p in study_results.COMMITTED.rglob("*") if p.is_file())
    assert committed == sorted(p.relative_to(tmp_path / "again")
                               for p in (tmp_path / "again").rglob("*") if p.is_file())
    for rel in committed:  # the same up to float noise of another machine (1e-4)
        assert _close(json.loads((tmp_path / "again" / rel).read_text()),
                      json.loads((study_results.COMMITTED / rel).read_text())), rel


def _close(a, b) -> bool:
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(map(_close, a, b))
    if isinstance(a, float) or isinstance(b, float):
        return abs(a - b) <= 1e-4
    return a == b


def test_tables_and_curve_come_from_the_result_files_in_seconds(results, tmp_path):
    docs = tmp_path / "evaluate.md"
    docs.write_text("intro\n" + "".join(f"{b}\nOLD-TABLE {name}\n{e}\n"
                                        for name, (b, e) in MARKERS.items()))
    start = time.perf_counter()
    lines: list[str] = []
    tables = write_tables(results, docs=docs, log=lines.append)
    assert time.perf_counter() - start < 30  # no model, no gold: seconds
    curve = tables["ablation-curve"]

    # The curve: every K's macro edge F1 is the files' average; K is the dev argmax.
    f1 = {k: stored_mean(results, "dev", "ablation", f"K={k}", "default", "tokengeist",
                         "edge_f1") for k in (4, 8, 16, 32)}
    avg = stored_mean(results, "dev", "avg-attention", "default", "default", "tokengeist",
                      "edge_f1")
    for k, v in f1.items():
        row = cells(curve, f"ablation, K = {k}")
        assert row[1].startswith(f"{v:.3f} [")
        assert row[2].startswith(f"{v - avg:+.3f} [")
        low, high = map(float, re.findall(r"[-+]?\d\.\d{3}", row[1])[1:3])
        assert low <= round(v, 3) <= high
        assert row[6] == str(k + 1)  # passes per conversation: K ablations + 1
    assert choose_k(f1) == max(f1, key=f1.get) == 16
    assert "**Chosen: K = 16**" in curve

    # The comparison: the chosen K over its 3 seeds (each span averaged over them first).
    test = tables["ablation-test"]
    mean3 = stored_mean(results, "test", "ablation", "K=16", "default", "tokengeist", "edge_f1")
    ref = stored_mean(results, "test", "avg-attention", "default", "default", "tokengeist",
                      "edge_f1")
    row = cells(test, "ablation, K = 16, mean of 3 seeds")
    assert row[1].startswith(f"{mean3:.3f}") and row[2].startswith(f"{mean3 - ref:+.3f}")
    assert 0 <= float(row[3]) <= 1  # the paired p-value
    for seed in (0, 1, 2):
        assert f"| ablation, K = 16, seed {seed} |" in test
    # Every floor of the registry beside the scorers, on the same spans, with no passes.
    from mtcabench.baselines import FLOORS
    assert "string-match" in FLOORS
    for name in FLOORS:
        floor = cells(test, f"floor: {name} (model-free)")
        mean = stored_mean(results, "test", "model-free", "floors", "default", name, "edge_f1")
        assert floor[1].startswith(f"{mean:.3f} [") and floor[2].startswith(f"{mean - ref:+.3f}")
        assert floor[8] == "0"

    # The peers table: the reference row has no difference; a per-query package's passes are
    # counted (*) from the queries its method asked; the floors cost nothing.
    peers = tables["peers"]
    ref_row = cells(peers, "tokengeist")
    assert ref_row[1] == "avg-attention" and ref_row[6] == ""
    pkg = [c for c in (line.strip("|").split("|") for line in peers.splitlines())
           if len(c) > 3 and c[1].strip() == "peer-at2"]
    assert {c[0].strip() for c in pkg} == {"tokengeist", "flat"}
    assert all(c[11].strip().endswith("*") for c in pkg)
    # Every floor of the registry closes the table (string-match, the lineage rules as a
    # method, too), each its files' average on the same spans, at no cost.
    from mtcabench.baselines import FLOORS
    for name in FLOORS:
        floor = cells(peers, name)
        assert floor[1] == "-" and floor[3] == "model-free" and floor[11] == "0"
        mean = stored_mean(results, "test", "model-free", "floors", "default", name, "edge_f1")
        assert floor[5].startswith(f"{mean:.3f} [")

    # The sink study: each variant against the first, wrong system edges per span.
    sink = tables["sink-study"]
    corrected = cells(sink, "corrected")
    base = stored_mean_sink(results, "shipped", "edge_f1")
    now = stored_mean_sink(results, "corrected", "edge_f1")
    assert cells(sink, "shipped")[1] == f"{base:.3f}"
    assert corrected[1].startswith(f"{now:.3f} ({now - base:+.3f} [")
    assert corrected[-1] == "3 / 5"

    # The files under tables/, and the figure: an SVG with a point and an interval per K.
    for name in ("ablation-curve", "ablation-test", "peers", "sink-study"):
        assert (results / "tables" / f"{name}.md").read_text() == tables[name] + "\n"
    svg = (results / "tables" / "ablation-curve.svg").read_text()
    tree = ET.fromstring(svg)
    assert tree.tag.endswith("svg")
    for k in (4, 8, 16, 32):
        assert f"K={k}" in svg
    assert "Dev: Tokengeist over the ablation scorer (3 conversations)" in svg
    write_tables(results, log=lines.append)
    assert (results / "tables" / "ablation-curve.svg").read_text() == svg  # the same file again

    # The plan's samples are larger than these files: docs keep their older tables.
    assert docs.read_text().count("OLD-TABLE") == 3  # the sink study's plan is its own
    assert any(line.startswith("ablation-curve: written, incomplete") for line in lines)
    write_tables(results, docs=docs, partial=True, log=lines.append)
    text = docs.read_text()
    assert "OLD-TABLE" not in text and tables["peers"] in text and text.startswith("intro\n")


def test_a_result_file_of_older_scores_asks_for_a_rescore(results):
    path = next((results / "units" / "test").rglob("*.json"))
    obj = json.loads(path.read_text())
    for point in obj["points"].values():
        for spans in point["methods"].values():
            for s in spans:
                s["score"].pop(columns()[-1])
    path.write_text(json.dumps(obj))
    with pytest.raises(ValueError, match="rescore"):
        write_tables(results, log=lambda _: None)


def weights_file(path: Path, train: list[str], held: list[str] | None = None) -> Path:
    training = {"conversations": len(train)}
    if train:
        training |= {"conversation_ids": train, "heldout_conversation_ids": held or []}
    path.write_text(json.dumps({"kind": "at2-weights", "training": training}))
    return path


def test_at2_weights_learned_on_a_test_conversation_are_refused(tmp_path):
    train = ["taubench/airline/gpt-4o/task-2/trial-0", "taubench/airline/gpt-4o/task-13/trial-3"]
    assert split_of(train[0]) == split_of(train[1]) == "train"
    assert check_training_split(weights_file(tmp_path / "ok.json", train[:1], train[1:])) == train
    test_id = "taubench/airline/gpt-4o/task-41/trial-0"
    assert split_of(test_id) == "test"
    with pytest.raises(ValueError, match=r"outside the training split: .*task-41/trial-0 \(test\)"):
        check_training_split(weights_file(tmp_path / "leak.json", train, [test_id]))
    with pytest.raises(ValueError, match="do not name the conversations"):
        check_training_split(weights_file(tmp_path / "old.json", []))


def test_the_peers_stages_refuse_weights_learned_outside_training(results):
    """Before any model runs; and every weights file the studies committed passes."""
    from mtcabench.studies import run_plan
    from mtcabench.studies._studies import WEIGHTS

    leak = ["taubench/airline/gpt-4o/task-2/trial-0", "taubench/airline/gpt-4o/task-1/trial-0"]
    weights_file(results / WEIGHTS, leak[:1], leak[1:])
    for stage in ("dev", "tune", "test"):
        with pytest.raises(ValueError, match=r"task-1/trial-0 \(test\)"):
            run_plan([stage], results, None, log=lambda _: None)
    for path in sorted((ROOT / RESULTS).rglob(WEIGHTS)):
        assert all(split_of(c) == "train" for c in check_training_split(path))


def test_the_curve_block_links_its_figure(results, tmp_path):
    docs = tmp_path / "docs" / "evaluate.md"
    docs.parent.mkdir()
    docs.write_text("".join(f"{b}\nOLD\n{e}\n" for b, e in MARKERS.values()))
    write_tables(results, docs=docs, figure=docs.parent / "figures" / "curve.svg", partial=True,
                 log=lambda _: None)
    assert "](figures/curve.svg)" in docs.read_text()
    assert ET.parse(docs.parent / "figures" / "curve.svg").getroot().tag.endswith("svg")


def test_the_curve_reads_average_attention_on_its_own_conversations_only(results):
    # Another study's average-attention unit in the same folder (the domains study shares it):
    # a dev conversation the curve's ablation units do not cover.
    from mtcabench.studies._studies import curve_rows

    store = ResultStore(results / "units")
    stored = [r for _, r in store.results()]
    ablation = {r.conversation_id for r in stored if r.scorer == "ablation" and r.split == "dev"}
    ref = [r for r in stored if (r.split, r.scorer, r.setting) == ("dev", "avg-attention",
                                                                    "default")]
    extra = ref[0].model_copy(update={"conversation_id": "other/study/conversation"})
    rows = curve_rows([*stored, extra])
    assert rows[0][2] == len(ablation)  # the reference's conversations: the curve's
    assert rows == curve_rows(stored)


def test_the_curve_says_where_more_passes_would_take_it():
    from mtcabench.studies._studies import next_doubling
    from mtcabench.studies._tables import Figure

    def rows(avg, *f1):
        return {0: ({"edge_f1": Figure(avg)},), **{k: ({"edge_f1": Figure(v)},)
                                                    for k, v in zip((4, 8, 16, 32), f1)}}

    # Shrinking gains: the next doubling is bounded by the last gain, and said to be a bound.
    text = next_doubling(rows(0.80, 0.50, 0.66, 0.74, 0.77))
    assert "+0.160, +0.080, +0.030" in text
    assert "K = 64 (65 passes)" in text and "at most 0.800, +0.000 from" in text
    assert "not a run" in text
    # Gains that do not shrink (or fall) give the gains only: no bound to read off.
    flat = next_doubling(rows(0.80, 0.50, 0.55, 0.65, 0.62))
    assert "+0.050, +0.100, -0.030" in flat and "at most" not in flat
    # Too few points, or Ks that are not doublings: nothing.
    assert next_doubling({0: rows(0.8, 0.5)[0], 4: rows(0.8, 0.5)[4]}) == ""


def test_the_docs_and_tables_are_what_the_committed_results_give(tmp_path):
    # docs/evaluate.md's study blocks and benchmarks/results/tables/ are regenerated from the
    # repository's own result files: a result committed without its tables (or a hand edit of
    # a table) fails here, not in a reader's hands.
    root = tmp_path / "results"
    shutil.copytree(ROOT / RESULTS, root)
    docs = tmp_path / "docs" / "evaluate.md"
    docs.parent.mkdir()
    shutil.copy(ROOT / "docs" / "evaluate.md", docs)
    write_tables(root, docs=docs, figure=docs.parent / "figures" / "ablation-curve.svg",
                 log=lambda _: None)
    assert docs.read_text() == (ROOT / "docs" / "evaluate.md").read_text()
    for table in sorted((ROOT / RESULTS / "tables").glob("*.md")):
        assert (root / "tables" / table.name).read_text() == table.read_text(), table.name


def test_tuning_reads_the_plans_dev_sample_only(results, tmp_path, monkeypatch):
    # The domains study keeps average attention's dev units on tau2 conversations in the same
    # folder; the tune stage once read them as its own and failed on a conversation its gold
    # does not hold (KeyError after the whole dev stage). It must tune on its sample alone.
    from mtcabench.benchmark import load_benchmark
    from mtcabench.studies import _plan as plan
    from mtcabench.studies._studies import TUNING, stage_tune
    from tests.support.sample_benchmark import build_sample_benchmark

    bench = load_benchmark(build_sample_benchmark(study_results.SAMPLE, tmp_path / "bench"))
    by_conv = bench.spans_by_conversation()
    ids = sorted(by_conv)
    monkeypatch.setattr(plan, "sample", lambda b, split, n: [(b.conversations[c], by_conv[c])
                                                           for c in ids][:n])
    monkeypatch.setattr(plan, "DEV_CONVERSATIONS", len(ids))
    monkeypatch.setattr(plan, "peer_rows",
                        lambda k, weights: [plan.AVG, plan.ablation_row(k, (0,))])
    store = ResultStore(results / "units")
    path, stored = next((p, r) for p, r in store.results()
                        if (r.split, r.scorer, r.setting) == ("dev", "avg-attention", "default"))
    other = stored.model_copy(update={"conversation_id": "tau2/airline/other/task-0/trial-0"})
    store.write(other, path.with_name("tau2_airline_other_task-0_trial-0.json"))

    tuning = stage_tune(bench, results, 16, results / "no-weights.json", log=lambda _: None)
    for scorer in ("avg-attention", "ablation", "peer-contextcite"):  # the last tuned as ablation
        assert tuning[scorer]["sample"]["conversations"] == ids
    assert json.loads((results / TUNING).read_text()) == tuning
