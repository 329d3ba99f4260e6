#!/usr/bin/env bash
# A longer fuzz run of meshsim's parsers than the one in the test command:
#
#   tests/fuzz/fuzz_long.sh [BUILD_DIR] [INPUTS] [SEED]
#
# BUILD_DIR defaults to build/asan (sanitizer reports then fail the run; build it with
# `cmake --preset asan && cmake --build build/asan -j 2`), INPUTS to 200000 and SEED to the
# current time (printed, so a failure can be replayed with the same seed).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
build=${1:-build/asan}
inputs=${2:-200000}
seed=${3:-$(date +%s)}
echo "fuzz: $inputs inputs, seed $seed ($build/tests/fuzz/meshsim_fuzz)"
exec "$build/tests/fuzz/meshsim_fuzz" --corpus tests/fuzz/corpus --inputs "$inputs" --seed "$seed"
