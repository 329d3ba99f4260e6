#!/usr/bin/env bash
# Regenerates the table of README.md's "How accurate is it?" section from `meshsim compare`:
# the lines between the accuracy-table markers are replaced by
#   meshsim compare data/published/published_runs.json --markdown
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
readonly begin='<!-- accuracy-table:begin -->' end='<!-- accuracy-table:end -->'
if ! grep -qF "$begin" README.md || ! grep -qF "$end" README.md; then
  echo "accuracy_table.sh: README.md lacks the $begin / $end markers" >&2
  exit 2
fi

table=$(mktemp)
readme=$(mktemp)
trap 'rm -f "$table" "$readme"' EXIT
"$meshsim" compare data/published/published_runs.json --markdown >"$table"
awk -v begin="$begin" -v end="$end" -v table="$table" '
  $0 == begin { print; while ((getline line < table) > 0) print line; skip = 1; next }
  $0 == end { skip = 0 }
  !skip { print }
' README.md >"$readme"

if [[ $check == 1 ]]; then
  if ! diff -u README.md "$readme"; then
    echo "README.md's accuracy table is stale: run tools/accuracy_table.sh" >&2
    exit 1
  fi
  echo "README.md's accuracy table matches meshsim compare"
  exit 0
fi
cp "$readme" README.md
echo "README.md: accuracy table regenerated"
