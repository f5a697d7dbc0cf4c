#!/usr/bin/env bash
# Re-resolve the locked requirement files from the pins in pyproject.toml, with uv.
#   scripts/locks/project.txt       every dependency of .venv (all extras), torch excepted
#   scripts/locks/label-studio.txt  the Label Studio virtual environment
#   scripts/locks/peers.txt         the peers' virtual environment (scripts/setup_peers.sh)
#   scripts/locks/phoenix.txt       the Arize Phoenix virtual environment (explain --phoenix's tests)
# scripts/setup.sh installs exactly these versions, so a fresh machine gets the set the tests
# passed with. Run this after changing a pin or a dependency, then scripts/setup.sh and the
# test suite, and commit the lock files with the change.
#
# torch is installed by setup.sh from its pinned CPU wheel (resolved here against that wheel,
# so that its dependencies are the CPU build's, not CUDA's) and is left out of the lock.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3.11}"
command -v "$PY" >/dev/null || PY=python3
UV="${UV:-uv}"
export UV_NATIVE_TLS=1
TORCH="$("$PY" scripts/pins.py torch)"
LS="$("$PY" scripts/pins.py label-studio)"
PHOENIX="$("$PY" scripts/pins.py arize-phoenix)"
find_links=()
for dir in ${PIP_FIND_LINKS:-} /opt/wheels; do
  [ -d "$dir" ] && find_links+=(--find-links "$dir")
done
overrides="$(mktemp)"; trap 'rm -f "$overrides"' EXIT
echo "torch==$TORCH+cpu" > "$overrides"
header="--custom-compile-command scripts/lock.sh"
"$UV" pip compile pyproject.toml --extra all --python-version 3.11 --python-platform x86_64-manylinux_2_28 \
  "${find_links[@]}" --override "$overrides" --no-emit-package torch $header -q \
  -o scripts/locks/project.txt
# The peers' venv (scripts/setup_peers.sh): the eval and test extras and the peers, every
# package the project also locks at the project's version (-c).
"$UV" pip compile pyproject.toml --extra eval --extra test --extra peers --python-version 3.11 \
  --python-platform x86_64-manylinux_2_28 "${find_links[@]}" --override "$overrides" \
  -c scripts/locks/project.txt --no-emit-package torch $header -q -o scripts/locks/peers.txt
echo "label-studio==$LS" | "$UV" pip compile - --python-version 3.11 --python-platform x86_64-manylinux_2_28 $header -q \
  -o scripts/locks/label-studio.txt
echo "arize-phoenix==$PHOENIX" | "$UV" pip compile - --python-version 3.11 --python-platform x86_64-manylinux_2_28 $header -q \
  -o scripts/locks/phoenix.txt
echo "locked: scripts/locks/project.txt ($(grep -c '==' scripts/locks/project.txt) packages), scripts/locks/peers.txt ($(grep -c '==' scripts/locks/peers.txt) packages), scripts/locks/label-studio.txt ($(grep -c '==' scripts/locks/label-studio.txt) packages), scripts/locks/phoenix.txt ($(grep -c '==' scripts/locks/phoenix.txt) packages)"
