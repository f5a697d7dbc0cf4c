"""Loading a release: datasets.load_dataset offline with typed features, and our own loader."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import datasets
import pytest
from datasets import List, Value

from mtcabench.benchmark import load_benchmark, load_release
from mtcabench.errors import InputError
from mtcabench.io import write_records
from mtcabench.release import build_release


@pytest.fixture()
def built(sample_inputs):
    return build_release("0.1.0", sample_inputs["reviewed"], sample_inputs["conversations"],
                         out=sample_inputs["out"])


def test_load_dataset_round_trip_with_typed_features(built, sample_inputs):
    cache = str(sample_inputs["cache"])
    spans = datasets.load_dataset(str(built.folder), "spans", split="test", cache_dir=cache)
    convs = datasets.load_dataset(str(built.folder), "conversations", split="test", cache_dir=cache)
    assert spans.num_rows == 7 and convs.num_rows == 3
    edges = spans.features["graph"]["edges"]
    assert isinstance(edges, List) and edges.feature["child"] == Value("int32")
    assert spans.features["span"]["turn"] == Value("int32")
    assert isinstance(convs.features["turns"], List)
    assert isinstance(convs.features["turns"].feature["tool_calls"], List)
    by_id = {r["id"]: r for r in spans}
    for s in built.spans:
        row = by_id[s.id]
        assert row["graph"]["edges"] == [
            {"child": e.child, "parent": e.parent, "kind": e.kind.value, "score": e.score,
             "evidence": None} for e in s.graph.edges]
        assert row["decision_source"] == s.decision_source.value
        assert row["span"]["text"] == s.span.text
    # Offsets refer to the turn's text, which the rows carry.
    conv_rows = {r["id"]: r for r in convs}
    for row in spans:
        turn = conv_rows[row["conversation_id"]]["turns"][row["span"]["turn"]]
        assert turn["text"][row["span"]["start"]:row["span"]["end"]] == row["span"]["text"]
    calls = [c for r in convs for t in r["turns"] for c in t["tool_calls"]]
    assert calls and all(isinstance(json.loads(c["arguments"]), dict) for c in calls)
    per_source = datasets.load_dataset(str(built.folder), "taubench", split="test", cache_dir=cache)
    assert per_source.num_rows == 7


@pytest.mark.slow
def test_load_dataset_works_offline_in_a_fresh_process(built, sample_inputs):
    code = (
        "import datasets, json, sys\n"
        "d = datasets.load_dataset(sys.argv[1], 'spans', split='test', cache_dir=sys.argv[2])\n"
        "print(json.dumps({'rows': d.num_rows, 'edges': repr(d.features['graph']['edges'])}))\n"
    )
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
           "HF_ENDPOINT": "http://127.0.0.1:9"}  # any attempt to go online would fail
    res = subprocess.run([sys.executable, "-c", code, str(built.folder),
                          str(sample_inputs["cache"] / "fresh")],
                         capture_output=True, text=True, env=env, timeout=300)
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert out["rows"] == 7 and "List({'child': Value('int32')" in out["edges"]


def test_package_loader_returns_the_built_records(built, sample_inputs):
    bench = load_release(built.folder, cache_dir=sample_inputs["cache"])
    assert bench.spans == built.spans
    assert list(bench.conversations.values()) == built.conversations
    assert bench.origin == str(built.folder)


def test_load_benchmark_reads_release_folders_and_still_jsonl_folders(built, sample_inputs,
                                                                      tmp_path):
    bench = load_benchmark(built.folder)
    assert [s.id for s in bench.spans] == [s.id for s in built.spans]
    jsonl = tmp_path / "jsonl"
    jsonl.mkdir()
    write_records(jsonl / "conversations.jsonl", built.conversations)
    write_records(jsonl / "spans.jsonl", built.spans)
    again = load_benchmark(jsonl)
    assert again.spans == bench.spans and again.conversations == bench.conversations


def test_tampered_release_is_refused(built, sample_inputs):
    data = built.folder / "data" / "spans" / "taubench.parquet"
    data.write_bytes(data.read_bytes() + b"\0")
    with pytest.raises(InputError, match="do not match their checksums.*spans/taubench.parquet"):
        load_release(built.folder, cache_dir=sample_inputs["cache"])


def test_not_a_release(tmp_path):
    with pytest.raises(InputError, match="neither a release folder nor a Hub dataset id"):
        load_release("no such thing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="not a release folder"):
        load_release(tmp_path / "empty")


def test_the_format_reads_without_the_release_stage():
    # The benchmark format sits below the release stage: importing it loads neither the stage
    # nor datasets / huggingface_hub (the scorer reads JSONL benchmarks without them), and the
    # stage still offers the readers under their old names.
    code = ("import sys, mtcabench.benchmark\n"
            "print([m for m in ('mtcabench.release', 'datasets', 'huggingface_hub') "
            "if m in sys.modules])\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "[]"
    import mtcabench.benchmark as fmt
    import mtcabench.release as stage

    assert stage.load_release is fmt.load_release and stage.read_manifest is fmt.read_manifest
