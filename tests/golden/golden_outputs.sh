#!/usr/bin/env bash
# Byte-identity guard for refactors: runs every command of tests/golden/commands.txt in order in
# one temporary folder and hashes what it printed (with the wall-clock figures masked) and every
# file it wrote. Compares with tests/golden/outputs.sha256; prints each entry that differs.
#   golden_outputs.sh <meshsim> [--update]     --update rewrites outputs.sha256 instead
# A deliberate output change regenerates the manifest in the same commit, which says why.
set -euo pipefail
meshsim=$(realpath "$1")
mode=${2:-check}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

# Wall-clock figures differ run to run: "wall_s": 0.123 in JSON, "wall 0.12 s" style in text,
# and the same in trace metadata.
mask() {
  sed -E -e 's/"wall_s": ?[-0-9.e+]+/"wall_s": W/g' \
    -e 's/"wall_seconds": ?[-0-9.e+]+/"wall_seconds": W/g' \
    -e 's/(wall[^0-9\n]{0,12})[0-9]+(\.[0-9]+)?( ?(ms|s|us))/\1W\3/g' \
    -e 's/(simulated in )[0-9.]+ s/\1W s/g' "$@"
}

n=0
: >"$work/.manifest"
while IFS= read -r line; do
  [[ -z $line || $line == \#* ]] && continue
  n=$((n + 1))

  touch "$work/.stamp"
  sleep 0.01
  # shellcheck disable=SC2086  # the line is split into words like a shell would
  if ! "$meshsim" $line >"$work/.out" 2>"$work/.err"; then
    echo "command $n failed: meshsim $line" >&2
    cat "$work/.err" >&2
    exit 1
  fi
  printf '%03d stdout %s\n' "$n" "$(mask "$work/.out" | sha256sum | cut -c1-16)" >>"$work/.manifest"
  while IFS= read -r f; do
    [[ $f == ./.* ]] && continue
    printf '%03d %s %s\n' "$n" "${f#./}" "$(mask "$f" | sha256sum | cut -c1-16)" >>"$work/.manifest"
  done < <(find . -type f -newer "$work/.stamp" | sort)
done <"$here/commands.txt"

if [[ $mode == --update ]]; then
  cp "$work/.manifest" "$here/outputs.sha256"
  echo "wrote $here/outputs.sha256 ($n commands, $(wc -l <"$work/.manifest") outputs)"
  exit 0
fi
if ! diff -u "$here/outputs.sha256" "$work/.manifest" >"$work/.diff"; then
  echo "outputs differ from tests/golden/outputs.sha256 (command number, output, hash):" >&2
  grep -E '^[-+][0-9]' "$work/.diff" >&2 || true
  exit 1
fi
echo "all $(wc -l <"$work/.manifest") outputs of $n commands are byte-identical"
