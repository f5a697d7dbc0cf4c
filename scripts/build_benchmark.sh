#!/usr/bin/env bash
# Regenerate the whole benchmark, values and claims, from the raw runs and the committed
# annotations: one command, the same bytes on a rerun.
#
#   scripts/build_benchmark.sh OUT [RAW_DIR]
#
# RAW_DIR (default $MTCABENCH_RAW, else ../shared/raw) holds tau-bench/ and tau2-bench/ as the
# upstream files were copied there (or taubench/ and tau2/, as `mtcabench raw fetch` writes); every file is verified against the raw manifest (git blob
# id, sha256) before it is read, and a file that differs is refused. OUT gets:
#   raw/             the verified upstream files
#   work/            every stage's output (conversations, candidates, decisions)
#   release/<VERSION>/  the release: `datasets.load_dataset("OUT/release/<VERSION>", "claims")`
# Stages (docs/release.md, docs/claims.md):
#   1. ingest every runs file (TauBench, tau2-bench; the bare lists of later tau2 versions with
#      the agent they name in their upstream file name, their domain from their policy);
#   2. values: annotate lineage and the counterfactual split, accepted automatically (rules);
#   3. claims: the annotated set (annotations/claims/): pass 1 as candidates, pass 2 (a second
#      person's checks) as the review decisions;
#   4. release build, split by task, the cap of 50 spans per conversation (values), every claim.
# Uses `mtcabench` from .venv (scripts/setup.sh) or the PATH.
set -euo pipefail
[ $# -ge 1 ] && [ $# -le 2 ] || { echo "usage: scripts/build_benchmark.sh OUT [RAW_DIR]" >&2; exit 2; }
checkout="$(cd "$(dirname "$0")/.." && pwd)"
out="$(mkdir -p "$1" && cd "$1" && pwd)"
raw="${2:-${MTCABENCH_RAW:-$checkout/../shared/raw}}"
# The upstream copies' folders (tau-bench/, tau2-bench/), or raw/data's after `raw fetch`.
tb_raw="$raw/tau-bench"; [ -d "$tb_raw" ] || tb_raw="$raw/taubench"
t2_raw="$raw/tau2-bench"; [ -d "$t2_raw" ] || t2_raw="$raw/tau2"
[ -d "$tb_raw" ] && [ -d "$t2_raw" ] \
  || { echo "error: $raw holds no tau-bench/ and tau2-bench/ folders; pass RAW_DIR" >&2; exit 2; }
VERSION="${MTCABENCH_VERSION:-2.1.0}"
mtca="$checkout/.venv/bin/mtcabench"
[ -x "$mtca" ] || mtca="$(command -v mtcabench)" \
  || { echo "error: no mtcabench: run scripts/setup.sh" >&2; exit 2; }
log() { printf '[build_benchmark] %s\n' "$*" >&2; }
run() { "$mtca" "$@"; }
work="$out/work"
rm -rf "$work" "$out/release/$VERSION"
mkdir -p "$work"

log "1/4 raw files, verified against the manifest"
# TauBench: the three files MTCABench holds (the manifest names more upstream files).
for f in gpt-4o-airline retail-grok-3 retail-gpt-4.1-mini; do
  run raw fetch --only "taubench/$f.json" --from "$tb_raw" --dest "$out/raw"
done
run raw fetch --source tau2 --from "$t2_raw" --dest "$out/raw"

log "1/4 ingest"
tb="$out/raw/taubench"; t2="$out/raw/tau2"
# TauBench runs do not record their agent model: it is the upstream file's, named here (the
# domain is read from each run's policy title).
run ingest taubench "$tb/gpt-4o-airline.json" --agent-model gpt-4o --out "$work/tb-airline.jsonl"
run ingest taubench "$tb/retail-grok-3.json" --agent-model grok-3 --out "$work/tb-retail-grok-3.jsonl"
run ingest taubench "$tb/retail-gpt-4.1-mini.json" --agent-model gpt-4.1-mini \
  --out "$work/tb-retail-gpt-4.1-mini.jsonl"
bare=()
for f in "$t2"/*.json; do
  case "$(basename "$f")" in *-adaptive.json) bare+=("$f") ;; esac
done
classic=()
for f in "$t2"/*.json; do
  case "$(basename "$f")" in *-adaptive.json) ;; *) classic+=("$f") ;; esac
done
run ingest tau2 "${classic[@]}" --out "$work/t2.jsonl"
# The bare lists of simulations record no agent: the upstream file names claude-opus-4-6 run
# by the adaptive agent; adaptive-agent, the name of its upstream submission, keeps them apart from
# the same agent's other submission (the wrapper files, adaptive_agent), which holds many of the
# same runs (docs/sources.md).
run ingest tau2 "${bare[@]}" --agent-model claude-opus-4-6 --agent-implementation adaptive-agent \
  --out "$work/t2-adaptive-all.jsonl"
# A run both submissions hold (the same simulation id and the same turns: 63 of the 64 medical
# runs, 2 of the airline ones) is one run: kept once, from the wrapper file.
"$(dirname "$mtca")/python" - "$work/t2.jsonl" "$work/t2-adaptive-all.jsonl" \
  "$work/t2-adaptive.jsonl" <<'PY'
import sys
from mtcabench.io import load_conversations, write_records
seen = {(c.metadata["origin"].get("simulation_id"), tuple(t.text for t in c.turns))
        for c in load_conversations(sys.argv[1]).values()}
bare = list(load_conversations(sys.argv[2]).values())
kept = [c for c in bare
        if (c.metadata["origin"].get("simulation_id"), tuple(t.text for t in c.turns)) not in seen]
write_records(sys.argv[3], kept)
print(f"kept {len(kept)} of {len(bare)} runs of the bare lists ({len(bare) - len(kept)} are "
      "runs of the wrapper files too)", file=sys.stderr)
PY
cat "$work"/tb-*.jsonl "$work/t2.jsonl" "$work/t2-adaptive.jsonl" > "$work/conversations.jsonl"

log "2/4 values: lineage and the counterfactual split, accepted by rule"
run annotate lineage --in "$work/conversations.jsonl" --out "$work/value-candidates.jsonl"
run annotate counterfactual --in "$work/conversations.jsonl" --out "$work/cf-candidates.jsonl" \
  --conversations-out "$work/cf-conversations.jsonl"
cat "$work/conversations.jsonl" "$work/cf-conversations.jsonl" > "$work/all-conversations.jsonl"
cat "$work/value-candidates.jsonl" "$work/cf-candidates.jsonl" > "$work/values.jsonl"
run review auto-accept --candidates "$work/values.jsonl" \
  --conversations "$work/all-conversations.jsonl" --out "$work/values-reviewed.jsonl"

log "3/4 claims: the annotated set, pass 1 and its checks"
ann="$checkout/annotations/claims"
pass1=(); checks=()
for f in "$ann"/pass1-*.jsonl; do pass1+=(-a "$f"); done
for f in "$ann"/check-*.jsonl; do checks+=(--checks "$f"); done
run annotate claims import -c "$work/conversations.jsonl" "${pass1[@]}" \
  --out "$work/claim-candidates.jsonl"
run review checks --candidates "$work/claim-candidates.jsonl" \
  --conversations "$work/conversations.jsonl" "${checks[@]}" --out "$work/claims-reviewed.jsonl"

log "4/4 release $VERSION"
cat "$work/values.jsonl" "$work/claim-candidates.jsonl" > "$work/candidates.jsonl"
cat "$work/values-reviewed.jsonl" "$work/claims-reviewed.jsonl" > "$work/reviewed.jsonl"
run release build --version "$VERSION" --reviewed "$work/reviewed.jsonl" \
  --conversations "$work/all-conversations.jsonl" --candidates "$work/candidates.jsonl" \
  --out "$out/release" --split-by-task --max-spans-per-conversation 50
log "done: $out/release/$VERSION (datasets.load_dataset(\"$out/release/$VERSION\", \"claims\"))"
