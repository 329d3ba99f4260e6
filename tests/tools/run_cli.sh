#!/usr/bin/env bash
# CLI test driver (registered by tests/tools/CMakeLists.txt):
#
#   run_cli.sh <expected-exit-code> <regex> <file-that-must-not-exist|-> -- <command...>
#
# Runs <command...> in a fresh temporary directory and fails, saying what went wrong, unless
#   - it exits with <expected-exit-code>;
#   - its combined stdout+stderr matches <regex> (grep -E);
#   - <file> (relative to the temporary directory) does not exist afterwards, nor any
#     <file>.tmp.* left over from an atomic write ("-": no such check);
#   - for exit code 2 (bad input): stdout is empty and stderr is exactly one line starting with
#     "meshsim: error:" (the CLI's error contract).
# The environment variable MESHSIM (set by CMake) names the meshsim binary, for `sh -c` commands.
# MESHSIM_CLI_KEEP=1 keeps the temporary directory for inspection.
set -uo pipefail

if (($# < 5)) || [[ $4 != "--" ]]; then
  echo "usage: run_cli.sh <expected-exit-code> <regex> <file|-> -- <command...>" >&2
  exit 2
fi
expected=$1
regex=$2
absent=$3
shift 4

tmp=$(mktemp -d "${TMPDIR:-/tmp}/meshsim-cli.XXXXXX") || exit 1
if [[ ${MESHSIM_CLI_KEEP:-0} == 1 ]]; then
  echo "temporary directory: $tmp"
else
  trap 'rm -rf "$tmp"' EXIT
fi

(cd "$tmp" && exec "$@") >"$tmp/.stdout" 2>"$tmp/.stderr" </dev/null
code=$?

problems=()
if [[ $code != "$expected" ]]; then
  if ((code > 128)); then
    problems+=("exit code $code (killed by signal $((code - 128))), expected $expected")
  else
    problems+=("exit code $code, expected $expected")
  fi
fi
# grep reads both files itself: `cat ... | grep -q` under pipefail fails when grep exits at the
# first match before cat has written everything (SIGPIPE), a race, not a mismatch.
if ! grep -Eq -- "$regex" "$tmp/.stdout" "$tmp/.stderr"; then
  problems+=("output does not match /$regex/")
fi
if [[ $absent != "-" ]]; then
  if [[ -e $tmp/$absent ]]; then
    problems+=("$absent exists afterwards but should not")
  fi
  for leftover in "$tmp/$absent".tmp.*; do
    [[ -e $leftover ]] && problems+=("temporary file ${leftover#"$tmp"/} left behind")
  done
fi
if [[ $expected == 2 ]]; then
  if [[ -s $tmp/.stdout ]]; then
    problems+=("bad input printed to stdout (expected nothing on stdout)")
  fi
  lines=$(wc -l <"$tmp/.stderr")
  if [[ $lines != 1 ]] || [[ -n $(tail -c 1 "$tmp/.stderr") ]]; then
    problems+=("stderr has $lines line(s), expected exactly one newline-terminated line")
  fi
  if ! head -n 1 "$tmp/.stderr" | grep -q '^meshsim: error: '; then
    problems+=("stderr does not start with 'meshsim: error: '")
  fi
fi

if ((${#problems[@]} == 0)); then
  echo "ok: exit $code, output matches /$regex/"
  exit 0
fi

echo "FAILED: $*"
for p in "${problems[@]}"; do echo "  - $p"; done
echo "--- stdout (first 20 lines) ---"
head -n 20 "$tmp/.stdout"
echo "--- stderr (first 20 lines) ---"
head -n 20 "$tmp/.stderr"
echo "--- files left in the temporary directory ---"
(cd "$tmp" && find . -mindepth 1 ! -name .stdout ! -name .stderr | sort)
exit 1
