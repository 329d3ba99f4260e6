#!/usr/bin/env bash
# Builds and runs meshsim_engine_bench (tests/bench/engine_bench.cpp) and prints where simulation
# time goes: engine throughput on ring attention at cp=64 and cp=256, a bare binary heap over the
# same event count, the validate and build times, and whether the engine meets its target of
# 2,000,000 simulated ops per second at cp=256.
#
#   tools/run_benchmarks.sh [--build DIR] [--no-build] [-- BENCHMARK_FLAGS...]
#
# Exit status: 0 when the benchmarks ran (PASS or FAIL); non-zero when the build failed or a
# benchmark crashed or reported an error. Needs only bash, cmake/ninja, awk and coreutils.
set -euo pipefail

readonly TARGET_OPS_PER_S=2000000
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly ROOT

usage() {
  cat <<EOF
usage: tools/run_benchmarks.sh [--build DIR] [--no-build] [-- BENCHMARK_FLAGS...]

  --build DIR   build directory to use (default: build/dev, configured with 'cmake --preset dev',
                RelWithDebInfo -O2); an unconfigured DIR is configured as RelWithDebInfo
  --no-build    run the existing binary without rebuilding it
  --            everything after is passed to meshsim_engine_bench, e.g.
                -- --benchmark_repetitions=5   (medians are then reported)
EOF
}

build_dir=""
do_build=1
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
    -h | --help) usage; exit 0 ;;
    --) shift; bench_args=("$@"); break ;;
    *) echo "error: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done

if [[ -z "$build_dir" ]]; then
  build_dir="$ROOT/build/dev"
  use_preset=1
else
  use_preset=0
  [[ "$build_dir" = /* ]] || build_dir="$PWD/$build_dir"
fi
bench="$build_dir/tests/bench/meshsim_engine_bench"

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
  echo "building meshsim_engine_bench in $build_dir" >&2
  cmake --build "$build_dir" --target meshsim_engine_bench >&2
fi
if [[ ! -x "$bench" ]]; then
  echo "error: $bench not found (build it, or drop --no-build)" >&2
  exit 2
fi
build_type="$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$build_dir/CMakeCache.txt" 2>/dev/null || true)"
case "$build_type" in
  Release | RelWithDebInfo | MinSizeRel) ;;
  *) echo "warning: build type '${build_type:-none}' is not optimized; figures will be low" >&2 ;;
esac

# --- run -------------------------------------------------------------------------------------------
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
json="$tmp/bench.json"
log="$tmp/bench.log"

echo "running $bench (about a minute)" >&2
status=0
"$bench" --benchmark_format=json --benchmark_out="$json" --benchmark_out_format=json \
  "${bench_args[@]}" >"$log" 2>&1 || status=$?
if [[ $status -ne 0 || ! -s "$json" ]]; then
  echo "error: meshsim_engine_bench failed (exit status $status); its output:" >&2
  tail -n 40 "$log" >&2
  exit $((status != 0 ? status : 3))
fi

# --- parse -----------------------------------------------------------------------------------------
# Google Benchmark writes one '"key": value' per line; keep the entries of the "benchmarks" array
# as 'name<TAB>key<TAB>value' lines.
declare -A field=()
while IFS=$'\t' read -r name key value; do
  field["$name/$key"]="$value"
done < <(awk '
  /"benchmarks": \[/ { in_benchmarks = 1; next }
  !in_benchmarks { next }
  match($0, /^ *"[A-Za-z0-9_]+": /) {
    key = substr($0, RSTART, RLENGTH); sub(/^ *"/, "", key); sub(/": $/, "", key)
    value = substr($0, RSTART + RLENGTH); sub(/,[ \r]*$/, "", value); sub(/[ \r]*$/, "", value)
    gsub(/^"|"$/, "", value)
    if (key == "name") { name = value; next }
    if (name != "") printf "%s\t%s\t%s\n", name, key, value
  }' "$json")

errors="$(awk '/"error_occurred": true/ { n++ } END { print n + 0 }' "$json")"
if [[ "$errors" -ne 0 ]]; then
  echo "error: $errors benchmark(s) reported an error:" >&2
  grep '"error_message"' "$json" >&2 || true
  exit 3
fi

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
exit 0
