#!/usr/bin/env bash
# The product's main job: install the dependencies, build the release meshsim, and sweep the
# parallel plans of the built-in defaults (llama3-70b on 1,024 H100s of the built-in h100-sxm
# cluster, sequence 8192, global batch 512): every valid tp x pp x cp x vp x mbs x schedule, OOM
# plans marked, the rest simulated on all cores, the top plans printed with why, every row written
# to meshsim-sweep.json (`meshsim report meshsim-sweep.json --html report.html` draws it) and the
# trace of the fastest plan to meshsim-trace.json (open it in https://ui.perfetto.dev). Extra
# arguments go to `meshsim sweep`, e.g.
#
#   tools/main-job.sh --model llama3-405b --nodes 512 --pp 8,16 --cp 1,2
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
exec build/release/tools/meshsim sweep --out meshsim-sweep.json --trace-best meshsim-trace.json "$@"
