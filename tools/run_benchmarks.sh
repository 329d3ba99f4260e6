#!/usr/bin/env bash
# Builds and runs the Google Benchmark programs of tests/bench and prints their figures:
#
# 1. meshsim_engine_bench (tests/bench/engine_bench.cpp): where simulation time goes: engine
#    throughput on ring attention at cp=64 and cp=256, a bare binary heap over the same event count,
#    the validate and build times, and whether the engine meets its target of 2,000,000 simulated
#    ops per second at cp=256.
# 2. meshsim_step_bench (tests/bench/step_bench.cpp): the scale targets, each case in its own
#    process (peak memory, VmHWM, is per process): one step of gpt3-175b on 4,096 GPUs (tp 8 pp 16
#    cp 4 dp 8, seq 32768, gbs 256) on one core (taskset -c 0 where available), target <= 10 s;
#    the default sweep (llama3-70b on 1,024 GPUs, every valid plan) with 2 jobs, target <= 120 s;
#    a table of wall time, peak memory, target and PASS/FAIL.
#
#   tools/run_benchmarks.sh [--build DIR] [--no-build] [--only engine|step] [-- BENCHMARK_FLAGS...]
#
# Exit status: 0 when the benchmarks ran (PASS or FAIL); non-zero when the build failed or a
# benchmark crashed or reported an error. Needs only bash, cmake/ninja, awk and coreutils.
set -euo pipefail

readonly TARGET_OPS_PER_S=2000000
readonly TARGET_STEP_S=10
readonly TARGET_SWEEP_S=120
readonly SWEEP_JOBS=2
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly ROOT

usage() {
  cat <<EOF
usage: tools/run_benchmarks.sh [--build DIR] [--no-build] [--only engine|step] [-- BENCHMARK_FLAGS...]

  --build DIR   build directory to use (default: build/dev, configured with 'cmake --preset dev',
                RelWithDebInfo -O2); an unconfigured DIR is configured as RelWithDebInfo
  --no-build    run the existing binaries without rebuilding them
  --only WHICH  run only the engine benchmarks (engine) or only the step and sweep targets (step)
  --            everything after is passed to meshsim_engine_bench, e.g.
                -- --benchmark_repetitions=5   (medians are then reported)

The step and sweep cases take about 2 minutes on 2 idle cores (each runs once, in its own
process).
EOF
}

build_dir=""
do_build=1
only=""
bench_args=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build)
      [[ $# -ge 2 ]] || { echo "error: --build needs a directory" >&2; exit 2; }
      build_dir="$2"
      shift 2
      ;;
    --build=*) build_dir="${1#--build=}"; shift ;;
    --no-build) do_build=0; shift ;;
    --only)
      [[ $# -ge 2 ]] || { echo "error: --only needs engine or step" >&2; exit 2; }
      only="$2"
      shift 2
      ;;
    --only=*) only="${1#--only=}"; shift ;;
    -h | --help) usage; exit 0 ;;
    --) shift; bench_args=("$@"); break ;;
    *) echo "error: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done

case "$only" in
  "" | engine | step) ;;
  *) echo "error: --only takes engine or step, got '$only'" >&2; exit 2 ;;
esac
run_engine=1
run_step=1
[[ "$only" != step ]] || run_engine=0
[[ "$only" != engine ]] || run_step=0

if [[ -z "$build_dir" ]]; then
  build_dir="$ROOT/build/dev"
  use_preset=1
else
  use_preset=0
  [[ "$build_dir" = /* ]] || build_dir="$PWD/$build_dir"
fi
bench="$build_dir/tests/bench/meshsim_engine_bench"
step_bench="$build_dir/tests/bench/meshsim_step_bench"
targets=()
[[ $run_engine -eq 0 ]] || targets+=(meshsim_engine_bench)
[[ $run_step -eq 0 ]] || targets+=(meshsim_step_bench)

# --- build -----------------------------------------------------------------------------------------
if [[ $do_build -eq 1 ]]; then
  if [[ ! -f "$build_dir/CMakeCache.txt" ]]; then
    echo "configuring $build_dir" >&2
    if [[ $use_preset -eq 1 ]]; then
      (cd "$ROOT" && cmake --preset dev) >&2
    else
      cmake -S "$ROOT" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DMESHSIM_BUILD_TESTS=ON -DMESHSIM_BUILD_BENCHMARKS=ON >&2
    fi
  fi
  for opt in MESHSIM_BUILD_TESTS MESHSIM_BUILD_BENCHMARKS; do
    if grep -q "^$opt:BOOL=OFF" "$build_dir/CMakeCache.txt"; then
      echo "error: $build_dir has $opt=OFF, so it has no benchmarks; use another --build DIR" >&2
      exit 2
    fi
  done
  echo "building ${targets[*]} in $build_dir" >&2
  cmake --build "$build_dir" --target "${targets[@]}" >&2
fi
for t in "${targets[@]}"; do
  if [[ ! -x "$build_dir/tests/bench/$t" ]]; then
    echo "error: $build_dir/tests/bench/$t not found (build it, or drop --no-build)" >&2
    exit 2
  fi
done
build_type="$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$build_dir/CMakeCache.txt" 2>/dev/null || true)"
case "$build_type" in
  Release | RelWithDebInfo | MinSizeRel) ;;
  *) echo "warning: build type '${build_type:-none}' is not optimized; figures will be low" >&2 ;;
esac

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# --- parse -----------------------------------------------------------------------------------------
# Google Benchmark writes one '"key": value' per line; load_fields FILE [AS] keeps the entries of
# its "benchmarks" array in field["name/key"] (field["AS/key"] for a file of one benchmark).
declare -A field=()
load_fields() {
  local name key value
  while IFS=$'\t' read -r name key value; do
    field["${2:-$name}/$key"]="$value"
  done < <(awk '
    /"benchmarks": \[/ { in_benchmarks = 1; next }
    !in_benchmarks { next }
    match($0, /^ *"[A-Za-z0-9_]+": /) {
      key = substr($0, RSTART, RLENGTH); sub(/^ *"/, "", key); sub(/": $/, "", key)
      value = substr($0, RSTART + RLENGTH); sub(/,[ \r]*$/, "", value); sub(/[ \r]*$/, "", value)
      gsub(/^"|"$/, "", value)
      if (key == "name") { name = value; next }
      if (name != "") printf "%s\t%s\t%s\n", name, key, value
    }' "$1")
}

# check_errors FILE WHAT: stop when a benchmark of FILE reported an error.
check_errors() {
  local errors
  errors="$(awk '/"error_occurred": true/ { n++ } END { print n + 0 }' "$1")"
  if [[ "$errors" -ne 0 ]]; then
    echo "error: $errors benchmark(s) of $2 reported an error:" >&2
    grep '"error_message"' "$1" >&2 || true
    exit 3
  fi
}

# --- engine benchmarks -----------------------------------------------------------------------------
run_engine_benchmarks() {
  local json="$tmp/bench.json" log="$tmp/bench.log"

  echo "running $bench (about a minute)" >&2
  status=0
  "$bench" --benchmark_format=json --benchmark_out="$json" --benchmark_out_format=json \
    "${bench_args[@]}" >"$log" 2>&1 || status=$?
  if [[ $status -ne 0 || ! -s "$json" ]]; then
    echo "error: meshsim_engine_bench failed (exit status $status); its output:" >&2
    tail -n 40 "$log" >&2
    exit $((status != 0 ? status : 3))
  fi

  load_fields "$json"
  check_errors "$json" meshsim_engine_bench

  # The entry of a benchmark: its median when run with repetitions, else its single run.
  entry() {
    if [[ -n "${field["$1_median/cpu_time"]+x}" ]]; then echo "$1_median"; else echo "$1"; fi
  }
  # get NAME KEY: a field of a benchmark, or empty when that benchmark did not run.
  get() {
    local e
    e="$(entry "$1")"
    echo "${field["$e/$2"]:-}"
  }
  # cpu_ms NAME: CPU time per iteration in milliseconds.
  cpu_ms() {
    local t u
    t="$(get "$1" cpu_time)"
    u="$(get "$1" time_unit)"
    [[ -n "$t" ]] || { echo ""; return; }
    awk -v t="$t" -v u="$u" 'BEGIN {
      f = (u == "ns") ? 1e-6 : (u == "us") ? 1e-3 : (u == "s") ? 1e3 : 1
      printf "%.6g", t * f }'
  }
  mrate() { [[ -n "$1" ]] && awk -v r="$1" 'BEGIN { printf "%.2fM", r / 1e6 }' || echo "n/a"; }
  ms() { [[ -n "$1" ]] && awk -v t="$1" 'BEGIN { printf "%.1f ms", t }' || echo "n/a"; }
  int() { awk -v x="$1" 'BEGIN { printf "%d", x + 0.5 }'; }

  eng64="BM_EngineRingAttention/64"
  eng256="BM_EngineRingAttention/256"
  events256="$(get "$eng256" events)"
  ops256="$(get "$eng256" ops)"
  if [[ -z "$events256" ]]; then
    echo "error: $eng256 did not run (was a --benchmark_filter passed?)" >&2
    exit 3
  fi
  events256="$(int "$events256")"
  ops256="$(int "$ops256")"
  heap="BM_BareHeap/$events256"
  hold="BM_BareHeapHold/$events256/256"

  rate64="$(get "$eng64" ops_per_s)"
  rate256="$(get "$eng256" ops_per_s)"
  heap_rate="$(get "$heap" ops_per_s)"
  hold_rate="$(get "$hold" ops_per_s)"
  eng_ms="$(cpu_ms "$eng256")"

  # compare BASELINE_MS: how the engine's time per run compares with a baseline over the same events.
  compare() {
    [[ -n "$1" && -n "$eng_ms" ]] || { echo "n/a"; return; }
    awk -v e="$eng_ms" -v b="$1" 'BEGIN {
      if (e >= b) printf "the engine is %.2f times slower", e / b
      else printf "the engine is %.2f times faster", b / e }'
  }

  # --- report ----------------------------------------------------------------------------------------
  echo
  echo "meshsim engine benchmarks ($(basename "$build_dir"), ${build_type:-unknown build type})"
  echo "ring attention: zigzag, p2p K/V rotation, fwd+bwd, seq = cp*1024, h100-sxm; times are CPU time"
  echo
  printf '  %-44s %14s %14s\n' "benchmark" "per run" "ops|events/s"
  printf '  %-44s %14s %14s\n' "engine simulate(), cp=64 ($(int "$(get "$eng64" ops)") ops)" \
    "$(ms "$(cpu_ms "$eng64")")" "$(mrate "$rate64")"
  printf '  %-44s %14s %14s\n' "engine simulate(), cp=256 ($ops256 ops)" \
    "$(ms "$eng_ms")" "$(mrate "$rate256")"
  printf '  %-44s %14s %14s\n' "bare heap, push all then pop ($events256 ev)" \
    "$(ms "$(cpu_ms "$heap")")" "$(mrate "$heap_rate")"
  printf '  %-44s %14s %14s\n' "bare heap, held at 256 entries ($events256 ev)" \
    "$(ms "$(cpu_ms "$hold")")" "$(mrate "$hold_rate")"
  printf '  %-44s %14s %14s\n' "validate_program, cp=256 (match + deadlock)" \
    "$(ms "$(cpu_ms BM_ValidateProgram/256)")" "$(mrate "$(get BM_ValidateProgram/256 ops_per_s)")"
  printf '  %-44s %14s %14s\n' "build_ring_attention, cp=256" \
    "$(ms "$(cpu_ms BM_BuildRingAttention/256)")" "$(mrate "$(get BM_BuildRingAttention/256 ops_per_s)")"
  printf '  %-44s %14s %14s\n' "pipeline 1f1b, p=64 m=1024 ($(int "$(get BM_EnginePipeline/1 ops)") ops)" \
    "$(ms "$(cpu_ms BM_EnginePipeline/1)")" "$(mrate "$(get BM_EnginePipeline/1 ops_per_s)")"
  printf '  %-44s %14s %14s\n' "pipeline interleaved v=2, p=64 m=1024 ($(int "$(get BM_EnginePipeline/2 ops)") ops)" \
    "$(ms "$(cpu_ms BM_EnginePipeline/2)")" "$(mrate "$(get BM_EnginePipeline/2 ops_per_s)")"
  printf '  %-44s %14s\n' "flow model: 1 GiB all-reduce, 4096 ranks" "$(ms "$(cpu_ms BM_FlowAllReduce4096)")"
  echo
  echo "flow model, cost per flow event (start or finish) with N concurrent flows:"
  for n in 10 100 1000 10000; do
    r="$(get "BM_FlowEvents/$n" flow_events_per_s)"
    [[ -n "$r" ]] && awk -v n="$n" -v r="$r" 'BEGIN { printf "  %6d flows: %10.2f us per event\n", n, 1e6 / r }'
  done
  echo
  echo "cp=256 run: $events256 engine events for $ops256 ops"
  echo "vs a bare heap push/pop of the same event count: $(compare "$(cpu_ms "$heap")")"
  echo "vs a bare heap held at 256 entries (event-loop use): $(compare "$(cpu_ms "$hold")")"
  ncpu="$(nproc 2>/dev/null || echo 1)"
  load="$(cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo 0)"
  if awk -v l="$load" -v n="$ncpu" 'BEGIN { exit !(l > n) }'; then
    echo "note: load average $load on $ncpu CPUs while measuring; expect noise"
  fi
  echo
  if awk -v r="$rate256" -v t="$TARGET_OPS_PER_S" 'BEGIN { exit !(r >= t) }'; then
    verdict="PASS"
  else
    verdict="FAIL"
  fi
  echo "$verdict: engine at cp=256 simulates $(mrate "$rate256") ops/s (target >= 2.00M ops/s)"
}

# --- step and sweep targets ------------------------------------------------------------------------
# run_case NAME FILTER [COMMAND_PREFIX...]: the one benchmark of meshsim_step_bench that FILTER
# selects, alone in its own process (so VmHWM is its own peak); its fields go to field["NAME/key"].
run_case() {
  local name="$1" filter="$2"
  shift 2
  local json="$tmp/$name.json" log="$tmp/$name.log" status=0
  echo "running $name${*:+ under '$*'}" >&2
  "$@" "$step_bench" --benchmark_filter="$filter" --benchmark_format=json \
    --benchmark_out="$json" --benchmark_out_format=json >"$log" 2>&1 || status=$?
  if [[ $status -ne 0 || ! -s "$json" ]]; then
    echo "error: meshsim_step_bench --benchmark_filter=$filter failed (exit status $status):" >&2
    tail -n 40 "$log" >&2
    exit $((status != 0 ? status : 3))
  fi
  check_errors "$json" "meshsim_step_bench ($name)"
  load_fields "$json" "$name"
  if [[ -z "${field["$name/real_time"]:-}" ]]; then
    echo "error: meshsim_step_bench --benchmark_filter=$filter ran no benchmark" >&2
    exit 3
  fi
}

# seconds NAME [KEY]: a case's wall time (or KEY: cpu_time, the process's CPU time) per iteration
# in seconds.
seconds() {
  awk -v t="${field["$1/${2:-real_time}"]}" -v u="${field["$1/time_unit"]}" 'BEGIN {
    f = (u == "ns") ? 1e-9 : (u == "us") ? 1e-6 : (u == "ms") ? 1e-3 : 1
    printf "%.2f", t * f }'
}

run_step_benchmarks() {
  local pin=()
  if command -v taskset >/dev/null 2>&1 && taskset -c 0 true 2>/dev/null; then
    pin=(taskset -c 0)
  else
    echo "warning: taskset -c 0 is not available; the step case runs unpinned" >&2
  fi
  local load_before load_after
  load_before="$(cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo 0)"
  echo "running $step_bench, one process per case (about 2 minutes)" >&2
  run_case step '^BM_Step4096/' "${pin[@]}"
  run_case sweep "^BM_DefaultSweep/$SWEEP_JOBS/"
  load_after="$(cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo 0)"

  local step_s sweep_s
  step_s="$(seconds step)"
  sweep_s="$(seconds sweep)"
  verdict() { awk -v t="$1" -v m="$2" 'BEGIN { print (t <= m) ? "PASS" : "FAIL" }'; }
  mb() { awk -v x="$1" 'BEGIN { printf "%.0f MB", x }'; }

  echo
  echo "meshsim scale targets ($(basename "$build_dir"), ${build_type:-unknown build type});" \
    "wall time, peak memory = VmHWM of the case's own process"
  echo
  printf '  %-52s %9s %9s %10s %10s %9s  %s\n' "case" "wall" "cpu" "peak mem" "growth" "target" \
    "verdict"
  printf '  %-52s %7s s %7s s %10s %10s %7s s  %s\n' \
    "step: gpt3-175b, 4,096 GPUs, tp8 pp16 cp4 dp8, 1 core" "$step_s" "$(seconds step cpu_time)" \
    "$(mb "${field[step/peak_rss_mb]}")" "$(mb "${field[step/growth_mb]}")" "<= $TARGET_STEP_S" \
    "$(verdict "$step_s" "$TARGET_STEP_S")"
  printf '  %-52s %7s s %7s s %10s %10s %7s s  %s\n' \
    "sweep: llama3-70b defaults, 1,024 GPUs, $SWEEP_JOBS jobs" "$sweep_s" \
    "$(seconds sweep cpu_time)" "$(mb "${field[sweep/peak_rss_mb]}")" \
    "$(mb "${field[sweep/growth_mb]}")" "<= $TARGET_SWEEP_S" "$(verdict "$sweep_s" "$TARGET_SWEEP_S")"
  echo
  echo "step: $(int "${field[step/ops]}") ops, $(int "${field[step/events]}") events," \
    "simulated step time $(awk -v t="${field[step/step_time_s]}" 'BEGIN { printf "%.3f", t }') s" \
    "(seq 32768, gbs 256, 1f1b, TP and DP folded)"
  echo "sweep: $(int "${field[sweep/plans]}") valid plans, $(int "${field[sweep/simulated]}")" \
    "simulated, $(int "${field[sweep/oom]}") OOM"
  local ncpu
  ncpu="$(nproc 2>/dev/null || echo 1)"
  echo "wall is the target; cpu = CPU time of the case's process, all threads; growth = peak minus"
  echo "the resident memory before the case; load average $load_before before, $load_after after," \
    "on $ncpu CPUs"
  if awk -v a="$load_before" -v b="$load_after" -v n="$ncpu" 'BEGIN { exit !(a > n - 0.5 || b > n + 0.5) }'; then
    echo "note: the machine was busy while measuring: wall times are high; run again when it is quiet"
  fi
}

int() { awk -v x="$1" 'BEGIN { printf "%d", x + 0.5 }'; }

[[ $run_engine -eq 0 ]] || run_engine_benchmarks
[[ $run_engine -eq 0 || $run_step -eq 0 ]] || echo
[[ $run_step -eq 0 ]] || run_step_benchmarks
exit 0
