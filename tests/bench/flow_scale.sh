#!/usr/bin/env bash
# The flow-level network's scale targets (issue 17, part 3): one `meshsim step --network flow` per
# case, each in its own process, timed by GNU time (/usr/bin/time -v): wall time and peak resident
# memory (maximum resident set size), against the targets, over RUNS runs (median, min, max).
#
#   tests/bench/flow_scale.sh [--meshsim PATH] [--runs N]
#
# Cases (both fold TP and DP under the flow model, sim/flow_fold.hpp):
#   llama3-70b, 1,024 GPUs, tp8 pp4 dp32, interleaved vp2, gbs 512, selective recompute: <= 5 s
#   llama3-405b, 16,384 GPUs, tp8 pp16 dp128, interleaved vp2, gbs 2048, selective recompute:
#     <= 60 s and <= 4 GB
# Exit status 0 when every run finished (PASS or FAIL printed), 2 on bad arguments, 3 when a run
# failed. Needs bash, awk and GNU time.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
meshsim="$ROOT/build/dev/tools/meshsim"
runs=3
while [[ $# -gt 0 ]]; do
  case "$1" in
    --meshsim) meshsim="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    -h | --help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "error: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[[ -x "$meshsim" ]] || { echo "error: $meshsim not found (build it or pass --meshsim)" >&2; exit 2; }
[[ -x /usr/bin/time ]] || { echo "error: GNU time (/usr/bin/time) is needed" >&2; exit 2; }

readonly CASE_70B="step --model llama3-70b --gpus 1024 --tp 8 --pp 4 --dp 32 --schedule interleaved --vp 2 --gbs 512 --recompute selective --network flow"
readonly CASE_405B="step --model llama3-405b --gpus 16384 --tp 8 --pp 16 --dp 128 --schedule interleaved --vp 2 --gbs 2048 --recompute selective --network flow"

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# measure NAME ARGS: RUNS runs; prints "median min max" of wall seconds and of peak MB.
measure() {
  local name="$1" args="$2" i
  : >"$tmp/$name.wall"
  : >"$tmp/$name.mem"
  for ((i = 0; i < runs; i++)); do
    # shellcheck disable=SC2086
    if ! /usr/bin/time -v -o "$tmp/$name.time" "$meshsim" $args >"$tmp/$name.out" 2>&1; then
      echo "error: meshsim $args failed:" >&2
      tail -n 20 "$tmp/$name.out" >&2
      exit 3
    fi
    awk -F': ' '/Elapsed \(wall clock\)/ {
        n = split($2, p, ":"); s = 0; for (k = 1; k <= n; k++) s = s * 60 + p[k]; print s }' \
      "$tmp/$name.time" >>"$tmp/$name.wall"
    awk -F': ' '/Maximum resident set size/ { printf "%.0f\n", $2 / 1024 }' \
      "$tmp/$name.time" >>"$tmp/$name.mem"
  done
  stats() { sort -g "$1" | awk '{ v[NR] = $1 } END { printf "%s %s %s", v[int((NR + 1) / 2)], v[1], v[NR] }'; }
  echo "$(stats "$tmp/$name.wall") $(stats "$tmp/$name.mem")"
  grep -E '^step time|^note' "$tmp/$name.out" | sed "s/^/  $name: /" >&2 || true
}

verdict() { awk -v t="$1" -v m="$2" 'BEGIN { print (t <= m) ? "PASS" : "FAIL" }'; }

load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
read -r w70 w70min w70max m70 m70min m70max <<<"$(measure 70b "$CASE_70B")"
read -r w405 w405min w405max m405 m405min m405max <<<"$(measure 405b "$CASE_405B")"
load_after="$(cut -d' ' -f1-3 /proc/loadavg)"

echo "flow-level network at scale: $runs runs per case, wall time and peak RSS (GNU time)"
printf '  %-44s %22s %24s %18s %s\n' case "wall s (median min-max)" "peak MB (median min-max)" \
  target verdict
printf '  %-44s %10s %5s-%-5s %12s %5s-%-5s %18s %s\n' "llama3-70b, 1,024 GPUs" "$w70" "$w70min" \
  "$w70max" "$m70" "$m70min" "$m70max" "<= 5 s" "$(verdict "$w70" 5)"
v405="$(verdict "$w405" 60)"
[[ "$(verdict "$m405" 4096)" == PASS ]] || v405=FAIL
printf '  %-44s %10s %5s-%-5s %12s %5s-%-5s %18s %s\n' "llama3-405b, 16,384 GPUs" "$w405" \
  "$w405min" "$w405max" "$m405" "$m405min" "$m405max" "<= 60 s, <= 4096 MB" "$v405"
echo "commands: meshsim $CASE_70B"
echo "          meshsim $CASE_405B"
echo "load average (1, 5, 15 min) before: $load_before; after: $load_after; $(nproc) CPUs"
