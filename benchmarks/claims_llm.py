"""The LLM pipeline on claims against the annotated set: `annotate run --phases
claim-propose,claim-verify --annotators llm --targets` on the claims of a split, scored per
claim kind with intervals beside the string-match floor; the method is
mtcabench/studies/_claims_llm.py.

The gold is the claims of a release built by scripts/build_benchmark.sh. Resumable: the run's
folder keeps the response cache and the records, so a rerun sends only what is not answered.
With no --base-url the embedded llama.cpp server serves the model (--model names a packaged
one); for example, in the background at low priority:

    nohup nice -n 19 .venv/bin/python benchmarks/claims_llm.py \\
        --release runs/benchmark/release/2.1.0 --split test --max-claims 30 \\
        --out runs/claims-llm/smollm2 > runs/claims-llm.log 2>&1 &

``--write-docs LABEL`` writes the table into docs/claims.md between the markers
``<!-- claims-llm-LABEL:begin -->`` and ``<!-- claims-llm-LABEL:end -->``.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]  # this checkout's mtcabench, whatever the venv

import jsonlines  # noqa: E402

from mtcabench.annotate import annotate_run  # noqa: E402
from mtcabench.annotate.options import CACHE_NAME  # noqa: E402
from mtcabench.benchmark import load_benchmark  # noqa: E402
from mtcabench.errors import InputError, ServiceError  # noqa: E402
from mtcabench.io import read_records, write_records  # noqa: E402
from mtcabench.model import Candidate, Proposal  # noqa: E402
from mtcabench.results import write_submission  # noqa: E402
from mtcabench.studies import (  # noqa: E402
    claims_of,
    llm_sample,
    llm_submission,
    llm_table,
    rejection_reasons,
    targets_lines,
    write_docs,
)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--release", type=Path, required=True,
                    help="a release with claims (scripts/build_benchmark.sh OUT: OUT/release/V)")
    ap.add_argument("--split", choices=("train", "dev", "test"), default="test")
    ap.add_argument("--max-claims", type=int, default=None,
                    help="whole conversations, shortest first, up to this many claims")
    ap.add_argument("--out", type=Path, required=True, help="the run's folder (resumable)")
    ap.add_argument("--base-url", help="an OpenAI-compatible endpoint (default: embedded)")
    ap.add_argument("--model", help="the endpoint's model, or a packaged model's name")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per request")
    ap.add_argument("--write-docs", metavar="LABEL",
                    help="write the table into docs/claims.md under this label's markers")
    args = ap.parse_args(argv)

    try:
        sample = llm_sample(claims_of(load_benchmark(args.release)), args.split,
                            args.max_claims)
        if not sample.spans:
            raise InputError(f"{args.release}: no claims in the {args.split} split")
        args.out.mkdir(parents=True, exist_ok=True)
        convs, targets = args.out / "conversations.jsonl", args.out / "targets.jsonl"
        write_records(convs, list(sample.conversations.values()))
        with jsonlines.open(targets, "w") as fh:
            fh.write_all(targets_lines(sample))
        print(f"{len(sample.spans)} claims in {len(sample.conversations)} conversations "
              f"({args.split} split)", flush=True)
        annotate_run(convs, args.out / "run", annotators="llm",
                               phases=("claim-propose", "claim-verify"), targets=targets,
                               base_url=args.base_url, model=args.model,
                               timeout_s=args.timeout, max_attempts=2)
        # The model's time, over every run of this folder (a run stopped and resumed included):
        # the cache stamps each answer; one request at a time on the embedded server, so the
        # time between two answers is one request's (gaps of a stop or a restart left out).
        with sqlite3.connect(args.out / "run" / CACHE_NAME) as db:
            stamps = sorted(t for (t,) in db.execute("SELECT created FROM answers"))
        gaps = [b - a for a, b in zip(stamps, stamps[1:]) if b - a < args.timeout]
        each = sorted(gaps)[len(gaps) // 2] if gaps else float("nan")
        run = args.out / "run"
        proposals = list(read_records(run / "proposals.jsonl", Proposal))
        candidates = (list(read_records(run / "candidates.jsonl", Candidate))
                      if (run / "candidates.jsonl").exists() else [])
        model = next((r.annotator.model for r in proposals), args.model or "?")
        paths = []
        for name, loose in (("submission.jsonl", False), ("submission-as-answered.jsonl", True)):
            header, entries = llm_submission([*proposals, *candidates], sample, model,
                                             as_answered=loose)
            write_submission(args.out / name, header, entries)
            paths.append(str(args.out / name))
        table = llm_table(tuple(paths), sample, model, candidates)
        reasons = ", ".join(f"{r} {n}" for r, n in
                            rejection_reasons([*proposals, *candidates]).most_common())
        footer = (f"Cost: {each:.0f} s a request (median of {len(gaps)}, one request at a time "
                  "on this machine's 2 shared cores, under load), one request per claim and one "
                  "more per graph that passes the checks. Rejections by reason: "
                  + (reasons or "none") + ".")
        print(table, "", footer, sep="\n")
        if args.write_docs:
            write_docs(ROOT / "docs" / "claims.md", table + "\n\n" + footer,
                       f"<!-- claims-llm-{args.write_docs}:begin -->",
                       f"<!-- claims-llm-{args.write_docs}:end -->")
    except (InputError, ServiceError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
