#!/usr/bin/env bash
# libFuzzer runs of meshsim's parsers (clang; the seeded driver in the test command needs none):
#
#   tests/fuzz/run_libfuzzer.sh [SECONDS] [TARGET...]
#
# Configures and builds the libfuzzer preset (clang, ASan + UBSan, MESHSIM_LIBFUZZER=ON) in
# build/libfuzzer with `-j ${JOBS:-2}`, then runs each target (cli hardware model program sweep
# published; all by default) for SECONDS seconds [60] on the checked-in seed corpus
# tests/fuzz/corpus/<target>/ (CLI seeds one argument per line, as the harness reads them). New
# inputs go to build/libfuzzer/fuzz/<target>/corpus, never into the checked-in corpus; a crash,
# sanitizer report, internal error or out-of-memory is saved as
# build/libfuzzer/fuzz/<target>/crash-* (replay: build/libfuzzer/tests/fuzz/meshsim_libfuzzer_<target>
# FILE) and fails the run. Prints one line per target and exits 1 when any target failed.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1
seconds=${1:-60}
shift $(($# > 0 ? 1 : 0))
targets=("$@")
((${#targets[@]})) || targets=(cli hardware model program sweep published kineto)
build=build/libfuzzer

mkdir -p "$build"
names=()
for t in "${targets[@]}"; do names+=("meshsim_libfuzzer_$t"); done
if ! { cmake --preset libfuzzer && cmake --build "$build" -j "${JOBS:-2}" --target "${names[@]}"; } \
  >"$build/run_libfuzzer-build.log" 2>&1; then
  grep -m 20 -E 'error:|CMake Error' "$build/run_libfuzzer-build.log" >&2
  echo "run_libfuzzer: the libfuzzer build failed (log: $build/run_libfuzzer-build.log)" >&2
  exit 1
fi

failed=0
for t in "${targets[@]}"; do
  work=$build/fuzz/$t
  rm -rf "$work"
  mkdir -p "$work/corpus" "$work/seeds"
  for seed in tests/fuzz/corpus/"$t"/*; do
    if [[ $t == cli ]]; then
      tr -s ' \t\n' '\n' <"$seed" >"$work/seeds/$(basename "$seed")"
    else
      cp "$seed" "$work/seeds/"
    fi
  done
  # -timeout: the CLI harness ends a run after 10 s itself; -rss_limit_mb: a run that needs more
  # memory than this is a finding (an allocation sized by the input).
  "$build/tests/fuzz/meshsim_libfuzzer_$t" -max_total_time="$seconds" -timeout=60 \
    -rss_limit_mb=4096 -print_final_stats=1 -artifact_prefix="$work/" "$work/corpus" \
    "$work/seeds" >"$work/log" 2>&1
  code=$?
  runs=$(grep -m 1 -oP 'stat::number_of_executed_units:\s*\K[0-9]+' "$work/log" || echo '?')
  found=$(find "$work" -maxdepth 1 -name 'crash-*' -o -maxdepth 1 -name 'oom-*' \
    -o -maxdepth 1 -name 'timeout-*' -o -maxdepth 1 -name 'leak-*' | wc -l)
  corpus=$(find "$work/corpus" -type f | wc -l)
  if ((code == 0)); then
    echo "$t: ok, $runs inputs in ${seconds} s, $corpus new corpus inputs"
  else
    failed=1
    echo "$t: FAIL (exit $code), $runs inputs, $found saved in $work/ (log: $work/log)"
    grep -m 5 -E 'FAIL |ERROR: |runtime error' "$work/log" | sed 's/^/  /'
  fi
done
exit $failed
