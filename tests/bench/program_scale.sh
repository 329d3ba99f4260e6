#!/usr/bin/env bash
# Issue 22's figures: what a user waits for on large schedule graphs, end to end (build, check,
# cost, simulate, metrics, output), each command run as a whole process.
#
#   tests/bench/program_scale.sh [--build DIR] [--runs N] [--with-sweep]
#
# 1. ring: `meshsim ring-attention --cp 1024 --seq 1048576 --json` (8.39 M ops): median wall time
#    of N runs (min-max), ops per second end to end, peak resident memory and bytes per op.
# 2. hold loop: a bare binary heap holding 100,000 pending events, pop one and push one, 10 M events
#    (meshsim_engine_bench BM_BareHeapHold/10000000/100000), in the same call: the ring's end-to-end
#    rate as a share of it.
# 3. step: `meshsim step --model llama3-70b --gpus 1024 --tp 8 --pp 2 --no-fold` (11.9 M ops):
#    median wall, peak memory, bytes per op.
# 4. with --with-sweep: `meshsim sweep --model llama3-70b --gpus 1024 --jobs 2` once: wall time
#    per simulated plan.
# Targets (issue 22): ring >= 5 M ops/s and >= 0.7 x the hold loop, <= 64 bytes per op; the
# unfolded 70B step <= 3 s and <= 1 GB; the sweep <= 0.25 s per simulated plan. Prints the load
# average before and after: figures taken beside other work measure that work too.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="$ROOT/build/dev"
runs=3
sweep=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --with-sweep) sweep=1; shift ;;
    *) echo "usage: tests/bench/program_scale.sh [--build DIR] [--runs N] [--with-sweep]" >&2
       exit 2 ;;
  esac
done
meshsim="$build/tools/meshsim"
bench="$build/tests/bench/meshsim_engine_bench"
for f in "$meshsim" "$bench"; do
  [[ -x $f ]] || { echo "error: $f is not built (cmake --build $build)" >&2; exit 2; }
done
[[ $runs =~ ^[1-9][0-9]*$ ]] || { echo "error: --runs expects a positive integer" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
load() { cut -d' ' -f1-3 /proc/loadavg; }

# timed NAME CMD...: runs CMD `runs` times; appends "wall_s peak_kb" per run to $work/NAME and
# keeps the last run's standard output in $work/NAME.out.
timed() {
  local name=$1
  shift
  local i
  for ((i = 0; i < runs; ++i)); do
    /usr/bin/time -f "%e %M" -o "$work/$name.time" "$@" >"$work/$name.out" 2>"$work/$name.err" ||
      { echo "error: $* failed: $(tail -1 "$work/$name.err")" >&2; exit 1; }
    cat "$work/$name.time" >>"$work/$name"
  done
}
# median COLUMN FILE / minmax COLUMN FILE
median() { sort -g -k"$1,$1" "$2" | awk -v c="$1" '{v[NR] = $c} END {print v[int((NR + 1) / 2)]}'; }
minmax() { sort -g -k"$1,$1" "$2" | awk -v c="$1" 'NR == 1 {lo = $c} {hi = $c} END {print lo "-" hi}'; }

echo "load average before: $(load); $runs runs per command; build $build"
timed ring "$meshsim" ring-attention --cp 1024 --seq 1048576 --json
ring_ops=$(awk -F'[:,]' '/^  "ops":/ {gsub(/ /, "", $2); print $2; exit}' "$work/ring.out")
"$bench" --benchmark_filter='BM_BareHeapHold/10000000/100000' --benchmark_format=json \
  >"$work/hold.json" 2>/dev/null
hold_rate=$(awk -F': ' '/"ops_per_s"/ {gsub(/,/, "", $2); print $2; exit}' "$work/hold.json")
timed step "$meshsim" step --model llama3-70b --gpus 1024 --tp 8 --pp 2 --no-fold
step_ops=$(awk '/^simulated/ {print $2; exit}' "$work/step.out")

ring_wall=$(median 1 "$work/ring")
ring_kb=$(median 2 "$work/ring")
step_wall=$(median 1 "$work/step")
step_kb=$(median 2 "$work/step")
awk -v ops="$ring_ops" -v wall="$ring_wall" -v range="$(minmax 1 "$work/ring")" -v kb="$ring_kb" \
  -v hold="$hold_rate" -v sops="$step_ops" -v swall="$step_wall" \
  -v srange="$(minmax 1 "$work/step")" -v skb="$step_kb" 'BEGIN {
  rate = ops / wall
  printf "%-44s %s\n", "case", "figure (target)"
  printf "%-44s %.2f s median (%s), %d ops\n", "ring cp 1024, seq 1M: wall", wall, range, ops
  printf "%-44s %.2f M ops/s (>= 5)\n", "ring: end-to-end rate", rate / 1e6
  printf "%-44s %.2f M events/s\n", "hold loop, 100,000 pending", hold / 1e6
  printf "%-44s %.3f (>= 0.7)\n", "ring rate / hold loop", rate / hold
  printf "%-44s %.0f MB, %.0f bytes/op (<= 64)\n", "ring: peak memory", kb / 1024, kb * 1024 / ops
  printf "%-44s %.2f s median (%s), %d ops (<= 3 s)\n", "llama3-70b 1,024 GPUs tp 8 pp 2 unfolded", \
    swall, srange, sops
  printf "%-44s %.0f MB, %.0f bytes/op (<= 1 GB)\n", "step: peak memory", skb / 1024, skb * 1024 / sops
}'
if ((sweep)); then
  start=$(date +%s.%N)
  "$meshsim" sweep --model llama3-70b --gpus 1024 --jobs 2 >"$work/sweep.out"
  end=$(date +%s.%N)
  plans=$(grep -o '[0-9]* simulated' "$work/sweep.out" | head -1 | cut -d' ' -f1)
  awk -v s="$start" -v e="$end" -v n="$plans" 'BEGIN {
    printf "%-44s %.1f s for %d simulated plans: %.3f s per plan (<= 0.25)\n",
      "sweep llama3-70b 1,024 GPUs, 2 jobs", e - s, n, (e - s) / n }'
fi
echo "load average after: $(load)"
