#!/usr/bin/env bash
# Install everything the demo and the tests need, idempotently and with caches:
#   - Debian Chromium (browser tests drive it; never a browser download),
#   - the project's virtual environment .venv (all extras), rebuilt when pyproject.toml changes,
#   - Label Studio in its own virtual environment (it pins many packages),
#   - the migrated Label Studio data template (first migration takes minutes; later starts copy it).
# Heavy builds are cached: llama-cpp-python's wheel in pip's cache, the Label Studio venv keyed
# by its version. A fresh machine gets everything; a warm one reuses it in seconds.
set -euo pipefail
cd "$(dirname "$0")/.."

CACHE="${MTCABENCH_CACHE:-$HOME/.cache/mtcabench}"
LS_VERSION="1.23.2"
LS_VENV="${MTCABENCH_LABEL_STUDIO_VENV:-$CACHE/ls-venv}"
PY="${PYTHON:-python3.11}"
command -v "$PY" >/dev/null || PY=python3
mkdir -p "$CACHE/logs"
log() { printf '[setup] %s\n' "$*" >&2; }

# 1. Chromium from Debian (in the background while Python packages install).
apt_pid=""
if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; then
  log "installing Debian chromium and chromium-driver"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  ( $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq \
      chromium chromium-driver ) >"$CACHE/logs/apt.log" 2>&1 &
  apt_pid=$!
fi

# 2. Label Studio in its own venv (background; it only downloads wheels).
ls_pid=""
if [ ! -x "$LS_VENV/bin/label-studio" ] || [ "$(cat "$LS_VENV/.mtcabench-version" 2>/dev/null)" != "$LS_VERSION" ]; then
  log "installing label-studio==$LS_VERSION into $LS_VENV (about 5 minutes)"
  ( rm -rf "$LS_VENV" && "$PY" -m venv "$LS_VENV" \
    && "$LS_VENV/bin/pip" install -q --upgrade pip \
    && "$LS_VENV/bin/pip" install -q "label-studio==$LS_VERSION" \
    && echo "$LS_VERSION" > "$LS_VENV/.mtcabench-version" ) >"$CACHE/logs/ls-install.log" 2>&1 &
  ls_pid=$!
fi

# 3. The project venv, keyed by the dependency file.
deps_hash="$(cat pyproject.toml | sha256sum | cut -c1-16)"
if [ ! -x .venv/bin/python ] || [ "$(cat .venv/.mtcabench-deps 2>/dev/null)" != "$deps_hash" ]; then
  log "creating .venv (llama-cpp-python compiles once, about 14 minutes, then comes from pip's cache)"
  rm -rf .venv
  "$PY" -m venv .venv
  .venv/bin/pip install -q --upgrade pip
  # torch first, pinned to the CPU build that lies on this machine's disk: a bare range
  # would pull a multi-GB CUDA build.
  .venv/bin/pip install -q "torch==2.13.0"
  .venv/bin/pip install -q -e ".[all]"
  echo "$deps_hash" > .venv/.mtcabench-deps
else
  log ".venv is up to date"
fi

fail=0
if [ -n "$apt_pid" ] && ! wait "$apt_pid"; then log "chromium install failed, see $CACHE/logs/apt.log"; fail=1; fi
if [ -n "$ls_pid" ] && ! wait "$ls_pid"; then log "label-studio install failed, see $CACHE/logs/ls-install.log"; fail=1; fi
[ "$fail" -eq 0 ] || exit 1

# 4. A migrated Label Studio data folder to copy per run (the first migration takes minutes).
MTCABENCH_LABEL_STUDIO_BIN="$LS_VENV/bin/label-studio" .venv/bin/python -m mtcabench.services.label_studio prepare

log "ready: .venv/bin/mtcabench, Label Studio at $LS_VENV, Chromium at /usr/bin/chromium"
