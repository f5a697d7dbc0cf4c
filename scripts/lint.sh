#!/usr/bin/env bash
# The static checks, run by CI (.ci/run) before any test; configured in pyproject.toml:
#   lint-imports   the package's layers and contracts ([tool.importlinter]); imports made
#                  inside functions count
#   deptry         dependencies declared against imported ([tool.deptry]): the package,
#                  benchmarks/ and scripts/, then tests/ for what they import but do not declare
#   ruff           the lint rules ([tool.ruff]) on the package, benchmarks/ and scripts/
# Every check runs even after one fails, so that one run lists everything to fix; the script
# exits 1 when any failed. The tools are the `dev` extra, installed into .venv by setup.sh.
set -uo pipefail
cd "$(dirname "$0")/.."
bin=.venv/bin
# The checkout's package, whatever .venv has installed (a worktree may share another's .venv).
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"

for tool in lint-imports deptry ruff; do
  if [ ! -x "$bin/$tool" ]; then
    echo "[lint] error: $bin/$tool is missing: the dev extra is not installed (scripts/lock.sh" \
         "locks it, scripts/setup.sh installs it)" >&2
    exit 1
  fi
done

failed=()
check() {
  local name="$1"; shift
  echo "[lint] $name: $*"
  "$@" || failed+=("$name")
}

check imports "$bin/lint-imports"
check dependencies "$bin/deptry" .
# tests/ (which deptry skips by default): only imports of undeclared or merely transitive
# packages; the package's own dependencies are naturally not all used by the tests.
check test-dependencies "$bin/deptry" tests --exclude __pycache__ --ignore DEP002,DEP004
check ruff "$bin/ruff" check mtcabench benchmarks scripts

if [ ${#failed[@]} -gt 0 ]; then
  echo "[lint] failed: ${failed[*]}" >&2
  exit 1
fi
echo "[lint] all checks passed"
