"""Push 3,845 generated tasks to a local Label Studio and pull the decisions back.

Run: /root/.cache/mtcabench/dev-venv/bin/python benchmarks/review_push_pull.py \
        [--spans 3845] [--batch-sizes 100,500,1000] [--conversations PATH_TO_gpt-4o-airline.json]

Spans are generated over the real TauBench airline conversations (the workplace's copy, or
raw/data/ after `mtcabench raw fetch`; the bundled sample when neither is there), so that each
task carries a conversation of realistic size. For each batch size the script pushes every
span to a fresh project (time, requests, payload), then pushes again (the idempotent rerun).
Then simulated reviewers accept every span (tasks imported with an accepting annotation; not
part of the tool, timed apart), and `pull` exports, validates and decides (time, requests).
The server is a local Label Studio started from the migrated template.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mtcabench.graph import with_structural_edges
from mtcabench.ingest import read_taubench
from mtcabench.model import (
    Annotator,
    Candidate,
    DependencyType,
    Edge,
    ProvenanceGraph,
    Role,
    TargetSpan,
    span_id,
)
from mtcabench.review import (
    Connection,
    ReviewClient,
    build_task,
    pull_decisions,
    push_candidates,
)
from mtcabench.review import ensure_project
from mtcabench.services.label_studio import local_label_studio

ROOT = Path(__file__).resolve().parent.parent
CANDIDATE_FILES = [
    ROOT.parent / "shared" / "raw" / "tau-bench" / "gpt-4o-airline.json",
    ROOT / "raw" / "data" / "taubench" / "gpt-4o-airline.json",
    ROOT / "raw" / "sample" / "sample-airline.json",
]
ANNOTATOR = Annotator(name="llm", model="bench", prompt_version="verify-v1")


def generated_candidates(convs, n: int, seed: int = 0) -> list[Candidate]:
    """n distinct valid candidates: a word of an answer -> latest user turn and latest tool
    result (with its structural edge), the shape of a typical gold graph."""
    rng = random.Random(seed)
    pool = [(c, t, w) for c in convs for t in c.turns if t.role is Role.ASSISTANT and t.content
            for w in range(min(8, len(t.content.split())))]
    if len(pool) < n:
        raise SystemExit(f"only {len(pool)} distinct spans available, {n} asked")
    out = []
    for conv, turn, w in rng.sample(pool, n):
        earlier = conv.turns[: turn.index]
        users = [t.index for t in earlier if t.role is Role.USER]
        tools = [t.index for t in earlier if t.role is Role.TOOL]
        edges = [Edge(child=turn.index, parent=users[-1])] if users else []
        if tools:
            edges.append(Edge(child=turn.index, parent=tools[-1]))
        nodes = sorted({turn.index, *(e.parent for e in edges)})
        graph = with_structural_edges(ProvenanceGraph(target=turn.index, nodes=nodes, edges=edges),
                                      conv)
        words = turn.content.split()
        start = _word_start(turn.content, w)
        span = TargetSpan(turn=turn.index, start=start, end=start + len(words[w]), text=words[w])
        dep = DependencyType.MULTI_SOURCE if len(edges) == 2 else DependencyType.DIRECT
        out.append(Candidate(id=span_id(conv.id, span), conversation_id=conv.id, span=span,
                             dependency_type=dep, graph=graph, annotator=ANNOTATOR))
    return out


def _word_start(text: str, w: int) -> int:
    pos = 0
    for i, word in enumerate(text.split()):
        pos = text.index(word, pos)
        if i == w:
            return pos
        pos += len(word)
    raise ValueError(w)


def reviewed_project(client: ReviewClient, candidates, convs, batch: int = 500) -> tuple[int, float]:
    """Simulated reviewers: the same tasks imported with an accepting annotation each.

    Creating 3,845 annotations one API call at a time takes Label Studio ~0.2 s each on this
    machine (not part of the tool); importing them with the tasks gives the same project
    state for the pull to export in a fraction of that.
    """
    verdict = {"id": "verdict", "from_name": "verdict", "to_name": "dialogue",
               "type": "choices", "value": {"choices": ["accept"]}}
    project_id, _ = ensure_project(client, "bench-reviewed")
    t0 = time.perf_counter()
    tasks = []
    for c in candidates:
        task = build_task(c, convs[c.conversation_id])
        task["annotations"] = [{"result": task["predictions"][0]["result"] + [verdict]}]
        tasks.append(task)
    for i in range(0, len(tasks), batch):
        client.call("import", client.sdk.projects.import_tasks, id=project_id,
                    request=tasks[i : i + batch])
    return project_id, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spans", type=int, default=3845)
    ap.add_argument("--batch-sizes", default="500")
    ap.add_argument("--conversations", type=Path, default=None)
    args = ap.parse_args()
    source = args.conversations or next(p for p in CANDIDATE_FILES if p.exists())
    convs = {c.id: c for c in read_taubench(source)}
    candidates = generated_candidates(list(convs.values()), args.spans)
    payload = sum(len(json.dumps(build_task(c, convs[c.conversation_id]))) for c in candidates)
    n_convs = len({c.conversation_id for c in candidates})
    print(f"source: {source.name}; {len(candidates)} spans over {n_convs} conversations; "
          f"task payload {payload / 1e6:.1f} MB ({payload / len(candidates) / 1e3:.1f} kB/task)")

    with local_label_studio() as server:
        print(f"Label Studio {server.url} (local, sqlite)")
        conn = Connection.resolve(server.url, server.api_key)
        project_id = None
        for bs in [int(x) for x in args.batch_sizes.split(",")]:
            with ReviewClient(conn) as client:
                r = push_candidates(client, candidates, convs, project=f"bench-{bs}",
                                    batch_size=bs, progress=False)
                again = push_candidates(client, candidates, convs, project=f"bench-{bs}",
                                        batch_size=bs, progress=False)
            project_id = r.project_id
            print(f"push   batch {bs:>5}: {r.imported} tasks in {r.seconds:6.1f} s "
                  f"({r.imported / r.seconds:6.1f} tasks/s), {r.requests} requests, "
                  f"{r.batches} batches")
            print(f"rerun  batch {bs:>5}: {again.imported} new, {again.already_present} present, "
                  f"{again.seconds:6.1f} s, {again.requests} requests")
        with ReviewClient(conn) as client:
            project_id, secs = reviewed_project(client, candidates, convs)
            print(f"simulated reviewers: {len(candidates)} accepting annotations imported with "
                  f"their tasks in {secs:.1f} s (not part of the tool)")
            p = pull_decisions(client, convs, project=project_id)
        s = p.summary
        print(f"pull: {s.decisions} decisions, {len(p.invalid)} invalid, in {p.seconds:.1f} s "
              f"({s.decisions / p.seconds:.1f} decisions/s), {p.requests} requests; "
              f"acceptance {100 * s.acceptance_rate:.1f}%")


if __name__ == "__main__":
    main()
