# Shared by scripts/setup.sh and scripts/wheel_smoke.sh (sourced, not run): where things are
# cached, the pinned versions, and the key of the portable llama-cpp-python wheel.
CACHE="${MTCABENCH_CACHE:-$HOME/.cache/mtcabench}"
LS_VENV="${MTCABENCH_LABEL_STUDIO_VENV:-$CACHE/ls-venv}"
PHOENIX_VENV="${MTCABENCH_PHOENIX_VENV:-$CACHE/phoenix-venv}"
PY="${PYTHON:-python3.11}"
command -v "$PY" >/dev/null || PY=python3
mkdir -p "$CACHE/logs"
log() { printf '[%s] %s\n' "$(basename "$0" .sh)" "$*" >&2; }
now() { date +%s; }

pin() { "$PY" scripts/pins.py "$1"; }
LS_VERSION="$(pin label-studio)"
PHOENIX_VERSION="$(pin arize-phoenix)"
LLAMA_VERSION="$(pin llama-cpp-python)"
TORCH_VERSION="$(pin torch)"
UV_VERSION="$(pin uv)"
UV="$CACHE/uv-$UV_VERSION/bin/uv"
export UV_NATIVE_TLS=1  # the system's CA store, as pip uses here (PIP_CERT)

# The portable llama.cpp build. GGML_NATIVE=OFF stops -march=native; the instruction sets are
# then fixed to the x86-64-v3 baseline (AVX2, FMA, F16C, BMI2) that every x86-64 machine of
# this kind runs. AVX-512 and AMX stay off: ggml's runtime CPU-variant dispatch
# (GGML_CPU_ALL_VARIANTS) reads CPUID only, and a virtual machine may advertise AMX without
# enabling its tile state (XCR0), which is how a tuned build died on `ldtilecfg` (SIGSEGV).
# On other architectures only the native tuning is switched off. LLAVA_BUILD=OFF and the
# LLAMA_BUILD_* switches skip the multimodal library and the tools, which the text-only
# server never loads (measured: 3.5 min instead of about 14 on 2 cores).
ggml_cmake_args() {
  local common="-DGGML_NATIVE=OFF -DGGML_BACKEND_DL=OFF -DGGML_CPU_ALL_VARIANTS=OFF -DLLAVA_BUILD=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF"
  case "$(uname -m)" in
    x86_64|amd64)
      echo "$common -DGGML_SSE42=ON -DGGML_AVX=ON -DGGML_F16C=ON -DGGML_FMA=ON -DGGML_AVX2=ON -DGGML_BMI2=ON -DGGML_AVX_VNNI=OFF -DGGML_AVX512=OFF -DGGML_AVX512_VBMI=OFF -DGGML_AVX512_VNNI=OFF -DGGML_AVX512_BF16=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF" ;;
    *) echo "$common" ;;
  esac
}
LLAMA_CMAKE_ARGS="$(ggml_cmake_args)"
PY_TAG="$("$PY" -c 'import sys; print(f"cp{sys.version_info[0]}{sys.version_info[1]}")')"
llama_key="$(printf '%s|%s|%s|%s' "$LLAMA_VERSION" "$LLAMA_CMAKE_ARGS" "$PY_TAG" "$(uname -m)" | sha256sum | cut -c1-16)"
LLAMA_WHEELS="$CACHE/wheels/llama-cpp-python-$LLAMA_VERSION-$llama_key"

# torch: the pinned CPU wheel where this machine keeps one (pip's find-links, /opt/wheels here),
# else the index's build of that version. A bare range would pull a multi-GB CUDA build.
torch_requirement() {
  local dir whl
  for dir in ${PIP_FIND_LINKS:-} /opt/wheels; do
    for whl in "$dir"/torch-"$TORCH_VERSION"+cpu-"$PY_TAG"-*.whl; do
      [ -f "$whl" ] && { echo "$whl"; return; }
    done
  done
  echo "torch==$TORCH_VERSION"
}
