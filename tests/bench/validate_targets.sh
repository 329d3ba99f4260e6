#!/usr/bin/env bash
# The validate mode's speed targets (issue 18), each timed once with the load average beside it
# (another job on the machine makes the first one slower: read the figure with its load):
#   1. `validate pipeline --schedule 1f1b --stages 4 --microbatches 8 --dtype fp64` with the
#      default sizes, on 4 ranks, finishes in under 60 s;
#   2. a request that would not fit (the GPU-sized 4096 x 4096 pipeline, --max-memory 1GB) is
#      refused with exit 2 in under 1 s.
#
#   tests/bench/validate_targets.sh [MESHSIM] [MPIEXEC]   (defaults: build/dev/tools/meshsim, mpirun)
#
# Prints one line per target (wall seconds, target, PASS/FAIL, load average); exit 1 when one
# fails.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
meshsim="${1:-$ROOT/build/dev/tools/meshsim}"
mpiexec="${2:-mpirun}"
root_flag=()
[[ $(id -u) -ne 0 ]] || root_flag=(--allow-run-as-root)
load() { cut -d' ' -f1-3 /proc/loadavg; }
status=0

# target NAME LIMIT_S EXPECTED_EXIT COMMAND...
target() {
  local name=$1 limit=$2 expected=$3
  shift 3
  local before start code wall verdict
  before="$(load)"
  start=$EPOCHREALTIME
  "$@" >/tmp/meshsim-validate-target.$$ 2>&1
  code=$?
  wall=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }')
  verdict=PASS
  if [[ $code -ne $expected ]] || awk -v w="$wall" -v l="$limit" 'BEGIN { exit !(w > l) }'; then
    verdict=FAIL
    status=1
  fi
  printf '%-44s %8s s  target < %s s, exit %s (expected %s)  %s  load %s -> %s\n' "$name" "$wall" \
    "$limit" "$code" "$expected" "$verdict" "$before" "$(load)"
  [[ $verdict == PASS ]] || tail -n 5 /tmp/meshsim-validate-target.$$
  rm -f /tmp/meshsim-validate-target.$$
}

target "pipeline 1f1b 4x8 fp64, default sizes, np 4" 60 0 \
  "$mpiexec" "${root_flag[@]}" --oversubscribe -np 4 "$meshsim" validate pipeline \
  --schedule 1f1b --stages 4 --microbatches 8 --dtype fp64
target "over --max-memory: refused" 1 2 \
  "$meshsim" validate pipeline --schedule 1f1b --stages 4 --microbatches 8 --dtype fp64 \
  --tokens 4096 --hidden 4096 --max-memory 1GB
exit $status
