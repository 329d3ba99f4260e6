#!/usr/bin/env bash
# MPI CLI test driver (registered by tests/CMakeLists.txt, label "mpi"):
#
#   run_mpi.sh <expected-exit-code> <regex> <error-lines> -- <command...>
#
# Runs <command...> (an mpiexec line) in a fresh temporary directory and fails, saying what went
# wrong, unless it exits with <expected-exit-code>, its combined output matches <regex> (grep -E)
# and exactly <error-lines> lines start with "meshsim: error:" (bad input is reported once, by
# rank 0, however many ranks there are; "-": no check). Prints the wall time of the command.
set -uo pipefail

if (($# < 5)) || [[ $4 != "--" ]]; then
  echo "usage: run_mpi.sh <expected-exit-code> <regex> <error-lines|-> -- <command...>" >&2
  exit 2
fi
expected=$1
regex=$2
error_lines=$3
shift 4

tmp=$(mktemp -d "${TMPDIR:-/tmp}/meshsim-mpi.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

start=$EPOCHREALTIME
(cd "$tmp" && exec "$@") >"$tmp/.out" 2>&1 </dev/null
code=$?
elapsed=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }')

problems=()
[[ $code == "$expected" ]] || problems+=("exit code $code, expected $expected")
grep -Eq -- "$regex" "$tmp/.out" || problems+=("output does not match /$regex/")
if [[ $error_lines != "-" ]]; then
  n=$(grep -c '^meshsim: error:' "$tmp/.out")
  [[ $n == "$error_lines" ]] || problems+=("$n 'meshsim: error:' lines, expected $error_lines")
fi

if ((${#problems[@]} == 0)); then
  echo "ok: exit $code, output matches /$regex/, ${elapsed} s"
  exit 0
fi
echo "FAILED: $*"
for p in "${problems[@]}"; do echo "  - $p"; done
echo "--- output (first 40 lines) ---"
head -n 40 "$tmp/.out"
exit 1
