#!/usr/bin/env bash
# Installs what meshsim's build and tests need on Debian 12 (bookworm). Idempotent: when every
# package is already installed it does not touch apt at all, so re-runs take well under a second.
# Runs as root, or through sudo when not root. Output is quiet; apt's log is shown only on failure.
#
#   tools/setup.sh            install what is missing
#   tools/setup.sh --tests    also what only the tests use (headless Chromium)
#   tools/setup.sh --check    only report what is missing (exit 1 if anything is)
# It also puts the Python module's build folders (build/dev/python, then build/release/python of
# this checkout) on Debian's python3 path, with a meshsim.pth file in its dist-packages: once a
# preset is built, /usr/bin/python3 -c "import meshsim" works.
set -euo pipefail

readonly PACKAGES=(
  # build
  build-essential cmake ninja-build g++
  # libraries (find_package in CMakeLists.txt)
  libboost-graph-dev nlohmann-json3-dev libfmt-dev
  # traces/ (Chakra execution traces: protoc and libprotobuf)
  protobuf-compiler libprotobuf-dev
  # kernels/ (CPU GEMMs through CBLAS)
  libopenblas-dev
  # tests: doctest unit tests, Google Benchmark benches, formatting check in tools/test-all.sh
  doctest-dev libbenchmark-dev clang-format
  # validate/ (CPU + MPI executor)
  openmpi-bin libopenmpi-dev
  # python/ (the meshsim Python module, built for Debian's /usr/bin/python3) and its pytest tests
  pybind11-dev python3-dev python3-pytest
  ca-certificates
)
# Only for the test suite (--tests): meshsim report's HTML page rendered headless; pandas for the
# Python module's to_pandas(); clang and its sanitizer runtimes for the asan preset.
readonly TEST_PACKAGES=(chromium python3-pandas clang libclang-rt-dev)

check_only=0
wanted=("${PACKAGES[@]}")
case "${1:-}" in
  "") ;;
  --check) check_only=1 ;;
  --tests) wanted+=("${TEST_PACKAGES[@]}") ;;
  -h | --help)
    sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'
    exit 0
    ;;
  *)
    echo "setup.sh: unknown argument '$1' (see --help)" >&2
    exit 2
    ;;
esac

installed() {
  dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q '^install ok installed$'
}

# The .pth file naming this checkout's module folders (site.py adds the ones that exist).
readonly PTH=/usr/lib/python3/dist-packages/meshsim.pth
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
pth_text=$(printf '%s\n' "$repo/build/dev/python" "$repo/build/release/python")
link_python_module() {
  [[ -d ${PTH%/*} ]] || return 0 # no Debian python3 (yet): nothing to link
  if [[ -f $PTH && $(cat "$PTH") == "$pth_text" ]]; then
    ((check_only)) || link_path_python
    return 0
  fi
  if ((check_only)); then
    echo "setup: $PTH does not name this checkout's Python module"
    return 1
  fi
  if ! printf '%s\n' "$pth_text" | "${as_root[@]}" tee "$PTH" >/dev/null; then
    echo "setup: cannot write $PTH (run as root)" >&2
    return 1
  fi
  echo "setup: $PTH names $repo/build/{dev,release}/python"
  link_path_python
}
# A python3 earlier on PATH than Debian's (pyenv, a virtualenv) of the same X.Y loads the same
# extension ABI: name the module folders in its site-packages too, so plain `python3` imports it.
link_path_python() {
  local debian_xy path_xy site
  debian_xy=$(/usr/bin/python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null) || return 0
  path_xy=$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null) || return 0
  [[ $debian_xy == "$path_xy" ]] || return 0
  site=$(python3 -c 'import site; print(site.getsitepackages()[0])' 2>/dev/null) || return 0
  [[ -d $site && $site != "${PTH%/*}" ]] || return 0
  [[ -f $site/meshsim.pth && $(cat "$site/meshsim.pth") == "$pth_text" ]] && return 0
  if printf '%s\n' "$pth_text" | "${as_root[@]}" tee "$site/meshsim.pth" >/dev/null; then
    echo "setup: $site/meshsim.pth names $repo/build/{dev,release}/python"
  fi
}
if [[ $(id -u) -eq 0 ]]; then
  as_root=(env DEBIAN_FRONTEND=noninteractive)
elif command -v sudo >/dev/null 2>&1; then
  as_root=(sudo env DEBIAN_FRONTEND=noninteractive)
else
  as_root=()
fi

missing=()
for p in "${wanted[@]}"; do
  installed "$p" || missing+=("$p")
done

if ((${#missing[@]} == 0)); then
  echo "setup: all ${#wanted[@]} packages already installed"
  link_python_module
  exit 0
fi
if ((check_only)); then
  echo "setup: missing: ${missing[*]}"
  exit 1
fi

if ((${#as_root[@]} == 0)); then
  echo "setup: not root and sudo is not available; install as root: ${missing[*]}" >&2
  exit 1
fi

echo "setup: installing ${missing[*]}"
log=$(mktemp "${TMPDIR:-/tmp}/meshsim-setup.XXXXXX.log")
trap 'rm -f "$log"' EXIT
run() {
  if ! "${as_root[@]}" "$@" >>"$log" 2>&1; then
    echo "setup: failed: $*" >&2
    tail -n 40 "$log" >&2
    exit 1
  fi
}
run apt-get update -qq
run apt-get install -y -qq --no-install-recommends "${missing[@]}"

still=()
for p in "${missing[@]}"; do
  installed "$p" || still+=("$p")
done
if ((${#still[@]} > 0)); then
  echo "setup: still missing after apt-get install: ${still[*]}" >&2
  exit 1
fi
link_python_module
echo "setup: done"
