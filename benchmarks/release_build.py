"""Build and validation of a full-size (3,845-span) release generated from the sample.

The sample's three conversations are replicated under new ids, with the hand-written review
decisions of tests/support/sample_reviews.py (14 decisions on 9 spans per copy, 7 released:
human and automatic decisions, edits, rejections, split votes), until the release holds the
paper's 3,845 spans. Each phase runs in a fresh process so that its peak memory (max RSS) is
its own; a process that only imports the release package gives the baseline.

Run: /root/.cache/mtcabench/dev-venv/bin/python benchmarks/release_build.py [--spans 3845]
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _sample_reviews():
    spec = importlib.util.spec_from_file_location(
        "sample_reviews", ROOT / "tests" / "support" / "sample_reviews.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def generate(folder: Path, n_spans: int) -> dict:
    """Write conversations.jsonl and reviewed.jsonl releasing exactly ``n_spans`` spans."""
    from mtcabench.io import write_records
    from mtcabench.model import span_id

    reviews = _sample_reviews()
    convs = reviews.sample_conversations()
    decisions = reviews.sample_decisions(convs)
    released_per_copy = len(reviews.RELEASED)
    copies = -(-n_spans // released_per_copy)
    out_convs, out_decisions = [], []
    for k in range(copies):
        new_id = {cid: cid.replace("/trial-", f"-copy{k:04d}/trial-") for cid in convs}
        out_convs += [c.model_copy(update={"id": new_id[c.id]}) for c in convs.values()]
        for d in decisions:
            cid = new_id[d.conversation_id]
            out_decisions.append(d.model_copy(update={"conversation_id": cid,
                                                      "id": span_id(cid, d.span)}))
    # Drop the last copy's surplus released spans (all their decisions) to hit n exactly.
    surplus = copies * released_per_copy - n_spans
    if surplus:
        last = out_decisions[-len(decisions):]
        drop_words = [reviews.SPANS[i][2] for i in sorted(reviews.RELEASED)[:surplus]]
        drop = {d.id for d in last if d.span.text in drop_words}
        out_decisions = [d for d in out_decisions if d.id not in drop]
    write_records(folder / "conversations.jsonl", out_convs)
    write_records(folder / "reviewed.jsonl", out_decisions)
    return {"conversations": len(out_convs), "decisions": len(out_decisions)}


#: phase -> (setup, timed work): imports happen in the setup, outside the timing.
PHASES = {
    "baseline": ("import mtcabench.release", "result = {}"),
    "validate": (
        "from mtcabench.release import read_decisions, read_release_conversations, select,"
        " validate_released",
        "convs, bad = read_release_conversations(folder / 'conversations.jsonl')\n"
        "decisions, bad2 = read_decisions(folder / 'reviewed.jsonl')\n"
        "sel = select(decisions)\n"
        "spans, fails = validate_released(sel.released, convs)\n"
        "assert not (bad or bad2 or sel.failures or fails)\n"
        "result = {'spans': len(spans)}",
    ),
    "build": (
        "from mtcabench.release import build_release",
        "b = build_release('1.0.0', folder / 'reviewed.jsonl', folder / 'conversations.jsonl',"
        " out=folder / sys.argv[2])\n"
        "result = {'spans': len(b.spans), 'conversations': len(b.conversations)}",
    ),
    "load": (
        "from mtcabench.release import load_release",
        "bench = load_release(folder / 'a' / '1.0.0', cache_dir=folder / 'cache')\n"
        "result = {'spans': len(bench.spans), 'conversations': len(bench.conversations)}",
    ),
}

RUNNER = (
    "import json, resource, sys, time\nfrom pathlib import Path\n"
    "folder = Path(sys.argv[1])\n{setup}\nt0 = time.perf_counter()\n{body}\n"
    "result['seconds'] = time.perf_counter() - t0\n"
    "result['max_rss_mib'] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024\n"
    "print('RESULT ' + json.dumps(result))\n"
)


def run_phase(name: str, folder: Path, *args: str) -> dict:
    setup, body = PHASES[name]
    code = RUNNER.replace("{setup}", setup).replace("{body}", body)
    res = subprocess.run([sys.executable, "-c", code, str(folder), *args], capture_output=True,
                         text=True, cwd=ROOT)
    if res.returncode != 0:
        raise SystemExit(f"phase {name} failed:\n{res.stderr}")
    line = next(x for x in res.stdout.splitlines() if x.startswith("RESULT "))
    return json.loads(line[len("RESULT "):])


def digests(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spans", type=int, default=3845)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mtcabench-release-bench-") as tmp:
        folder = Path(tmp)
        t0 = time.perf_counter()
        gen = generate(folder, args.spans)
        gen_s = time.perf_counter() - t0
        base = run_phase("baseline", folder)
        val = run_phase("validate", folder)
        first = run_phase("build", folder, "a")
        second = run_phase("build", folder, "b")
        load = run_phase("load", folder)
        same = digests(folder / "a" / "1.0.0") == digests(folder / "b" / "1.0.0")
        size = sum(p.stat().st_size for p in (folder / "a" / "1.0.0").rglob("*") if p.is_file())
        inputs = sum((folder / n).stat().st_size for n in ("conversations.jsonl", "reviewed.jsonl"))
    print(f"release of {first['spans']} spans in {first['conversations']} conversations "
          f"({gen['decisions']} decisions, {inputs / 2**20:.1f} MiB of JSONL input; "
          f"generated in {gen_s:.1f} s)")
    print(f"{'phase':<44}{'seconds':>10}{'peak RSS MiB':>14}{'over import':>13}")
    rows = [("import mtcabench.release (baseline, no work)", base),
            ("read + select + validate every graph", val),
            ("build (validate + write folder), first", first),
            ("build again (other folder)", second),
            ("load_release (datasets, records)", load)]
    for label, r in rows:
        extra = r["max_rss_mib"] - base["max_rss_mib"]
        print(f"{label:<44}{r['seconds']:>10.2f}{r['max_rss_mib']:>14.0f}{extra:>13.0f}")
    print(f"release folder: {size / 2**20:.2f} MiB; two builds byte-identical: {same}")
    print(f"validation throughput: {val['spans'] / val['seconds']:.0f} spans/s")


if __name__ == "__main__":
    main()
