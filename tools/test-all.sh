#!/usr/bin/env bash
# Everything CI checks, in order (each phase is timed):
#   1. tools/setup.sh --tests                  dependencies (fast when already installed)
#   2. dev preset:  configure + build all      then `ctest --preset dev`   (every test; with nvcc
#                   the CUDA backend plugin too, which must build and link)
#   3. asan preset: configure + build all      then `ctest --preset asan`  (the "unit" tests)
#   4. clang-format --dry-run --Werror on every C++ file under the source folders
# A failing phase does not stop the later ones (a failed build skips its tests), so one run shows
# every problem. Exits 0 only if every phase passed, and ends with a one-line summary.
# Build output is shown only when a build fails (full log in build/<preset>/test-all-build.log).
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1

# The dev preset builds the CUDA backend when CMake finds nvcc (MESHSIM_CUDA=AUTO): find the
# toolkit's usual place when it is not on PATH.
if ! command -v nvcc >/dev/null 2>&1 && [[ -x /usr/local/cuda/bin/nvcc ]]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi

jobs=$(nproc 2>/dev/null || echo 2)
readonly FORMAT_DIRS=(sim schedules traces tools tests kernels validate python)

summary=()
failed=0
started_all=$SECONDS

# phase <label> <command...>: runs the command, records "label ok|FAIL Ns".
phase() {
  local label=$1
  shift
  local start=$SECONDS
  echo "=== $label"
  if "$@"; then
    summary+=("$label ok $((SECONDS - start))s")
    return 0
  fi
  summary+=("$label FAIL $((SECONDS - start))s")
  failed=1
  echo "=== $label: FAILED" >&2
  return 1
}

skip() {
  summary+=("$1 skipped")
  echo "=== $1: skipped ($2)"
}

# Configure and build a preset quietly; on failure print the end of the log.
build_preset() {
  local preset=$1
  local log=build/$preset/test-all-build.log
  mkdir -p "build/$preset"
  if cmake --preset "$preset" >"$log" 2>&1 && cmake --build --preset "$preset" >>"$log" 2>&1; then
    echo "built $preset ($(grep -c '^\[' "$log" || true) build steps)"
    # With nvcc the dev preset builds the CUDA backend, the plugin next to meshsim.
    if [[ $preset == dev ]] && command -v nvcc >/dev/null 2>&1; then
      if [[ ! -f build/dev/tools/libmeshsim_cuda.so ]]; then
        echo "nvcc is on PATH but the dev build made no CUDA backend plugin" \
          "(build/dev/tools/libmeshsim_cuda.so)" >&2
        return 1
      fi
      echo "built the CUDA backend plugin build/dev/tools/libmeshsim_cuda.so"
    fi
    return 0
  fi
  # Compiler errors first: the lines around the first "error", then the log's tail.
  grep -n -m 20 -E 'error:|CMake Error' "$log" >&2 || true
  echo "--- last 60 lines of $log ---" >&2
  tail -n 60 "$log" >&2
  return 1
}

test_preset() {
  ctest --preset "$1" --parallel "$jobs"
}

check_format() {
  if ! command -v clang-format >/dev/null 2>&1; then
    echo "clang-format is not installed (run tools/setup.sh)" >&2
    return 1
  fi
  local dirs=() d
  for d in "${FORMAT_DIRS[@]}"; do [[ -d $d ]] && dirs+=("$d"); done
  local files
  files=$(find "${dirs[@]}" -type f \( -name '*.cpp' -o -name '*.hpp' -o -name '*.h' -o -name '*.cc' \
    -o -name '*.cu' -o -name '*.cuh' \) | sort)
  local count
  count=$(printf '%s' "$files" | grep -c . || true)
  # Prints the file's name when it is not formatted ($1 is expanded by the inner sh).
  # shellcheck disable=SC2016
  local check_one='clang-format --dry-run --Werror "$1" >/dev/null 2>&1 || echo "$1"'
  local bad
  bad=$(printf '%s\n' "$files" | grep . | tr '\n' '\0' |
    xargs -0 -r -n 1 -P "$jobs" sh -c "$check_one" _ | sort)
  if [[ -n $bad ]]; then
    echo "not clang-formatted ($(printf '%s\n' "$bad" | wc -l) of $count files; fix with clang-format -i):" >&2
    printf '%s\n' "$bad" | sed 's/^/  /' >&2
    return 1
  fi
  echo "all $count C++ files are clang-formatted"
}

if phase setup tools/setup.sh --tests; then
  for preset in dev asan; do
    if phase "$preset-build" build_preset "$preset"; then
      phase "$preset-tests" test_preset "$preset"
    else
      skip "$preset-tests" "the $preset build failed"
    fi
  done
else
  skip dev-build "setup failed"
  skip asan-build "setup failed"
fi
phase format check_format

total=$((SECONDS - started_all))
line=$(printf '%s, ' "${summary[@]}")
if ((failed)); then
  echo "test-all: FAIL (${line%, }) in ${total}s"
  exit 1
fi
echo "test-all: PASS (${line%, }) in ${total}s"
