#!/usr/bin/env bash
# The package as a user gets it: build the wheel, install it into a fresh virtual environment
# outside the checkout, and run the main job (`mtcabench demo`) from a folder outside it too.
# Proves that prompts, the Label Studio interface and the sample travel as package data.
# Needs scripts/setup.sh first (uv, the portable llama wheel, Label Studio). CI runs it.
#
#   scripts/wheel_smoke.sh [DEMO OPTIONS...]     e.g. --annotators lineage
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/_env.sh
checkout="$(pwd)"
work="$(mktemp -d /tmp/mtcabench-wheel.XXXXXX)"
trap 'rm -rf "$work"' EXIT
s=$(now)

rm -rf dist
"$UV" build -q --wheel --out-dir dist . >"$CACHE/logs/wheel-build.log" 2>&1 \
  || { log "error: building the wheel failed, see $CACHE/logs/wheel-build.log"; exit 1; }
wheel="$(ls dist/mtcabench-*.whl)"
log "built $wheel"

"$UV" venv -q -p "$PY" "$work/venv"
VIRTUAL_ENV="$work/venv" "$UV" pip install -q "$(torch_requirement)"
# The wheel with the main job's extras, at the locked versions (constraints, not requirements:
# only what the wheel asks for is installed).
VIRTUAL_ENV="$work/venv" "$UV" pip install -q --find-links "$LLAMA_WHEELS" \
  --only-binary llama-cpp-python -c scripts/locks/project.txt "$wheel[eval,llm-server]"
log "installed into $work/venv in $(( $(now) - s )) s"

mkdir "$work/run"
cd "$work/run"
installed="$("$work/venv/bin/python" -c 'import mtcabench, sys; print(mtcabench.__file__)')"
case "$installed" in
  "$work/venv/"*) ;;
  *) log "error: mtcabench was imported from $installed, not from the installed wheel"; exit 1 ;;
esac
env -u PYTHONPATH "$work/venv/bin/mtcabench" demo --out runs/sample "$@"
for f in runs/sample/conversations.jsonl runs/sample/annotate/candidates.jsonl \
         runs/sample/release/*/README.md runs/sample/submission.tokengeist.jsonl; do
  [ -s "$f" ] || { log "error: the demo from the wheel did not write $f"; exit 1; }
done
cd "$checkout"
log "the main job ran from the installed wheel outside the checkout in $(( $(now) - s )) s"
