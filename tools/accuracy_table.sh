#!/usr/bin/env bash
# Regenerates the tables of README.md's "How accurate is it?" section from `meshsim compare`:
#   between the accuracy-table markers
#     meshsim compare data/published/published_runs.json --markdown
#   between the accuracy-table-torchtitan markers
#     meshsim compare data/published/torchtitan_runs.json --markdown, then the same command's
#     text output (every row's measured, predicted and error, or why it is skipped)
#   between the accuracy-table-megatron-bridge markers
#     meshsim compare data/published/megatron_bridge_h100_runs.json --markdown
#   between the accuracy-table-fms-fsdp markers
#     meshsim compare data/published/fms_fsdp_runs.json --markdown, then its text output
#
#   tools/accuracy_table.sh [MESHSIM]           rewrite README.md (MESHSIM: build/dev/tools/meshsim)
#   tools/accuracy_table.sh [MESHSIM] --check   exit 1, with the difference, if README.md is stale
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
meshsim=build/dev/tools/meshsim
check=0
for arg in "$@"; do
  case "$arg" in
    --check) check=1 ;;
    *) meshsim=$arg ;;
  esac
done

table=$(mktemp)
readme=$(mktemp)
current=$(mktemp)
trap 'rm -f "$table" "$readme" "$current"' EXIT
cp README.md "$current"

# replace NAME: the lines between <!-- NAME:begin --> and <!-- NAME:end --> become $table.
replace() {
  local begin="<!-- $1:begin -->" end="<!-- $1:end -->"
  if ! grep -qF "$begin" "$current" || ! grep -qF "$end" "$current"; then
    echo "accuracy_table.sh: README.md lacks the $begin / $end markers" >&2
    exit 2
  fi
  awk -v begin="$begin" -v end="$end" -v table="$table" '
    $0 == begin { print; while ((getline line < table) > 0) print line; skip = 1; next }
    $0 == end { skip = 0 }
    !skip { print }
  ' "$current" >"$readme"
  cp "$readme" "$current"
}

"$meshsim" compare data/published/published_runs.json --markdown >"$table"
replace accuracy-table

# table_and_rows RUNS: the --markdown table of a runs file, then every row's text output.
table_and_rows() {
  echo '```console'
  echo "\$ meshsim compare $1 --markdown"
  echo '```'
  echo
  "$meshsim" compare "$1" --markdown
  echo
  echo '```console'
  echo "\$ meshsim compare $1"
  "$meshsim" compare "$1"
  echo '```'
}

table_and_rows data/published/torchtitan_runs.json >"$table"
replace accuracy-table-torchtitan

runs=data/published/megatron_bridge_h100_runs.json
{
  echo '```console'
  echo "\$ meshsim compare $runs --markdown"
  echo '```'
  echo
  "$meshsim" compare "$runs" --markdown
} >"$table"
replace accuracy-table-megatron-bridge

table_and_rows data/published/fms_fsdp_runs.json >"$table"
replace accuracy-table-fms-fsdp

if [[ $check == 1 ]]; then
  if ! diff -u README.md "$current"; then
    echo "README.md's accuracy tables are stale: run tools/accuracy_table.sh" >&2
    exit 1
  fi
  echo "README.md's accuracy tables match meshsim compare"
  exit 0
fi
cp "$current" README.md
echo "README.md: accuracy tables regenerated"
