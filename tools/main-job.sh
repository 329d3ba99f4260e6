#!/usr/bin/env bash
# The product's main job: install the dependencies, build the release meshsim, and simulate the
# default ring-attention step (context parallelism 8, sequence 131072, zigzag, P2P rotation on the
# built-in h100-sxm profile), printing the summary and writing meshsim-trace.json (open it in
# https://ui.perfetto.dev). Extra arguments go to `meshsim ring-attention`, e.g.
#
#   tools/main-job.sh --cp 16 --seq 262144 --hardware h200-sxm
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

# Quiet on success; the full output of a failing step is shown.
quietly() {
  local out
  if ! out=$("$@" 2>&1); then
    printf '%s\n' "$out" >&2
    echo "main-job: failed: $*" >&2
    exit 1
  fi
}

tools/setup.sh
echo "main-job: building meshsim (release preset)"
quietly cmake --preset release
quietly cmake --build --preset release --target meshsim
exec build/release/tools/meshsim ring-attention --trace meshsim-trace.json "$@"
