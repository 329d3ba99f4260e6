#!/usr/bin/env bash
# meshsim's start-up cost (issue 23): `meshsim --version` and `meshsim step --help`, each run RUNS
# times in its own process under GNU time (/usr/bin/time -f "%e %M %U %S": elapsed seconds, peak
# resident memory in KB, user and system CPU seconds), with the wall time also read in
# microseconds around each run (bash's EPOCHREALTIME; GNU time's %e has 10 ms steps). On a loaded
# machine the wall time is mostly waiting for a core: the CPU time shows the work. Prints the median with min-max of each and the
# machine's load (uptime), against the targets: <= 20 ms and <= 20 MB. The CUDA backend is a
# plugin opened only by --backend cuda, so neither command loads the CUDA runtime, cuBLAS or NCCL.
#
#   tests/bench/startup.sh [--meshsim PATH] [--runs N]
#
# Exit status 0 when every run finished (PASS or FAIL printed), 2 on bad arguments, 3 when a run
# failed. Needs bash 5, awk and GNU time.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
meshsim="$ROOT/build/dev/tools/meshsim"
runs=11
while [[ $# -gt 0 ]]; do
  case "$1" in
    --meshsim) meshsim="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    -h | --help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "error: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[[ -x "$meshsim" ]] || { echo "error: $meshsim not found (build it or pass --meshsim)" >&2; exit 2; }
[[ -x /usr/bin/time ]] || { echo "error: GNU time (/usr/bin/time) is needed" >&2; exit 2; }
[[ $runs =~ ^[1-9][0-9]*$ ]] || { echo "error: --runs takes a positive integer" >&2; exit 2; }

readonly TARGET_MS=20 TARGET_MB=20
# "median (min-max)" of the numbers on stdin, with printf format $1.
stats() {
  sort -g | awk -v f="$1" '{ v[NR] = $1 } END {
    m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
    printf f " (" f "-" f ")", m, v[1], v[NR] }'
}
median() { sort -g | awk '{ v[NR] = $1 } END { print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "meshsim start-up: $runs runs each of $meshsim"
echo "load: $(uptime | sed 's/.*load average/load average/'), $(nproc) cores"
verdict=0
for args in "--version" "step --help"; do
  walls=() elapsed=() rss=() cpu=()
  for ((i = 0; i < runs; i++)); do
    out=$(mktemp)
    start=$EPOCHREALTIME
    # shellcheck disable=SC2086  # the arguments are words
    if ! /usr/bin/time -o "$out" -f "%e %M %U %S" "$meshsim" $args >/dev/null; then
      echo "error: meshsim $args failed" >&2
      rm -f "$out"
      exit 3
    fi
    end=$EPOCHREALTIME
    read -r e m u k <"$out"
    rm -f "$out"
    walls+=("$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", (b - a) * 1000 }')")
    elapsed+=("$e")
    cpu+=("$(awk -v u="$u" -v k="$k" 'BEGIN { printf "%.2f", u + k }')")
    rss+=("$(awk -v k="$m" 'BEGIN { printf "%.1f", k / 1024 }')")
  done
  wall_ms=$(printf '%s\n' "${walls[@]}" | median)
  rss_mb=$(printf '%s\n' "${rss[@]}" | median)
  result=PASS
  if awk -v w="$wall_ms" -v r="$rss_mb" -v tw=$TARGET_MS -v tr=$TARGET_MB \
    'BEGIN { exit !(w > tw || r > tr) }'; then
    result=FAIL
    verdict=1
  fi
  printf '%-20s wall %s ms, %%e %s s, CPU %s s, max RSS %s MB  [<= %s ms, <= %s MB: %s]\n' \
    "meshsim $args" "$(printf '%s\n' "${walls[@]}" | stats %.1f)" \
    "$(printf '%s\n' "${elapsed[@]}" | stats %.2f)" "$(printf '%s\n' "${cpu[@]}" | stats %.2f)" \
    "$(printf '%s\n' "${rss[@]}" | stats %.1f)" $TARGET_MS $TARGET_MB $result
done
((verdict == 0)) && echo "start-up: PASS" || echo "start-up: FAIL"
