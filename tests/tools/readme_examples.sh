#!/usr/bin/env bash
# Runs every `$ meshsim ...` line of the README's console blocks, in order, in one temporary
# folder (so later examples can read files earlier ones wrote), where data/ is the repository's
# data folder (examples read data/hf/) and tests/ its tests folder (test data files). Fails on the
# first non-zero exit.
#   readme_examples.sh <path-to-meshsim> <path-to-README.md>
set -euo pipefail
meshsim=$(realpath "$1")
readme=$(realpath "$2")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
ln -s "$(dirname "$readme")/data" data
ln -s "$(dirname "$readme")/tests" tests
count=0
while IFS= read -r line; do
  cmd=${line#'$ meshsim '}
  count=$((count + 1))
  echo "example $count: meshsim $cmd"
  # shellcheck disable=SC2086  # the README line is split into words like a shell would
  if ! "$meshsim" $cmd >out.txt 2>&1; then
    cat out.txt
    echo "README example failed: meshsim $cmd" >&2
    exit 1
  fi
done < <(awk '/^```console/{on=1; next} /^```/{on=0} on && /^\$ meshsim /' "$readme")
if ((count == 0)); then
  echo "no examples found in $readme" >&2
  exit 1
fi
echo "all $count README examples ran"
