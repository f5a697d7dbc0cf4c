"""`mtcabench view`'s document and folder, on the hand-built benchmark of conftest.py: the
per-span values worked out by hand, texts stored once, the script that carries the document,
and bad input refused before anything is written. (The page itself: test_view_browser.py.)"""

from __future__ import annotations

import json
import re

from typer.testing import CliRunner

from mtcabench.benchmark import load_benchmark
from mtcabench.cli import app
from mtcabench.scoring.view import DATA_VERSION, site_paths, view_data
from mtcabench.scoring.view._site import data_script

runner = CliRunner()


def test_per_span_values_by_hand(bench, submissions):
    folder, ids = bench
    data = view_data(load_benchmark(folder), submissions)
    assert data["version"] == DATA_VERSION
    assert [m["label"] for m in data["methods"]] == ["tokengeist/avg-attention", "flat/avg-attention"]
    row = {sid: k for k, sid in enumerate(s["id"] for s in data["spans"])}
    tg, flat = (m["rows"] for m in data["methods"])

    metric = {m["name"]: k for k, m in enumerate(data["metrics"])}

    def get(rows, name):
        r = rows[row[ids[name]]]
        return r["status"], r["values"][metric["edge_f1"]], r["source_hit"]

    # Exactly the gold chain 10->8->7->6; its one source, tool turn 7, recovered.
    assert get(tg, "s1-flight") == ("predicted", 1.0, True)
    # Beside its depth, the gold path's content and call-structure hops: 10->8 and 8->7 carry
    # content, 7->6 is the tool result's link to its call; every span here is real.
    flight = data["spans"][row[ids["s1-flight"]]]
    assert flight["depth"] == 3 and flight["hops"] == [2, 1] and flight["origin"] == "real"
    # One of three predicted edges is gold, one of two gold edges found: F1 = 2/5.
    assert get(tg, "s1-price") == ("predicted", 0.4, True)
    assert get(flat, "s1-price") == ("predicted", 0.6667, True)
    assert get(tg, "s2-flight") == ("missing", 0.0, False)
    assert get(flat, "s1-route") == ("skipped", 0.0, False)
    # Empty gold graph: nothing predicted is exactly right; a predicted user turn is not.
    assert get(tg, "s3-seat") == ("predicted", 1.0, True)
    assert get(flat, "s3-seat") == ("predicted", 0.0, False)
    assert tg[row[ids["s1-price"]]]["edges"] == [[10, 8, 0.9, []], [8, 7, 0.8, []],
                                                 [7, 6, 0.7, []]]
    # No gold edge of this benchmark has an evidence range: evidence hit is undefined.
    assert {r["values"][metric["evidence_hit"]] for r in tg + flat} == {None}
    # Each distinct text once: the three sample runs share no turn, but turns are indexed.
    n_turns = sum(len(c["turns"]) for c in data["conversations"])
    assert len(data["texts"]) <= n_turns and len(data["conversations"]) == 3


def test_the_script_carries_the_document_exactly():
    data = {"texts": ["it's a \\ back\\slash", "line\u2028sep", "</script>", "\"q\""]}
    script = data_script(data)
    prefix, suffix = "window.MTCA_VIEW = JSON.parse('", "');\n"
    assert script.startswith(prefix) and script.endswith(suffix) and script.isascii()
    body = script[len(prefix):-len(suffix)]
    assert not re.search(r"(?<!\\)(\\\\)*'", body)  # no quote the string would end at
    assert json.loads(re.sub(r"\\(.)", r"\1", body)) == data  # what the JS string literal holds


def test_an_output_that_is_an_input_is_refused(bench, submissions, tmp_path):
    folder, _ = bench
    sub = tmp_path / "view" / "data.js"
    sub.parent.mkdir()
    sub.write_bytes(submissions[0].read_bytes())
    res = runner.invoke(app, ["view", "--benchmark", str(folder), str(sub),
                              "--out", str(sub.parent)])
    assert res.exit_code == 3 and "data.js" in res.output
    assert sorted(p.name for p in sub.parent.iterdir()) == ["data.js"]


def test_a_bad_submission_names_its_line_and_writes_nothing(bench, tmp_path):
    folder, _ = bench
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"span_id": "nope#1:0-1", "edges": []}\n', encoding="utf-8")
    out = tmp_path / "view"
    res = runner.invoke(app, ["view", "--benchmark", str(folder), str(bad), "--out", str(out)])
    assert res.exit_code == 3 and "bad.jsonl:1 (record nope#1:0-1)" in res.output
    assert not any(p.exists() for p in site_paths(out))
