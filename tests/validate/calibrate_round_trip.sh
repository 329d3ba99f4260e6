#!/usr/bin/env bash
# The calibrate -> validate round trip on 2 ranks (label "mpi"):
#   calibrate_round_trip.sh <meshsim> <mpiexec words...>
# 1. `meshsim calibrate --quick` writes a profile and its raw measurements;
# 2. the simulator loads the profile unchanged (--hardware FILE);
# 3. `validate tp-linear --compare` with it reports both makespans in its JSON;
# 4. `validate suite --only "tp linear"` with it prints the JSON table with "mape", the spread
#    and the hold-out summary.
# Fails with what went wrong. Accuracy is not asserted here (a busy CI machine); the figures are
# measured on a quiet one (README). For the same reason the calibration runs with --force
# --attempts 1: a busy machine would otherwise (rightly) be refused with exit 5; the report must
# still say what the stability checkpoints saw, and the measurements file must carry them.
set -euo pipefail
meshsim=$1
shift
mpi=("$@")
tmp=$(mktemp -d "${TMPDIR:-/tmp}/meshsim-cal.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

"${mpi[@]}" -n 2 "$meshsim" calibrate --quick --out cal/profile.json >cal.out 2>&1 && fail "calibrate into a missing folder succeeded"
grep -q "meshsim: error: --out cal/profile.json: " cal.out || fail "no one-line error for a missing folder: $(cat cal.out)"
[[ ! -e cal ]] || fail "a failed calibration left files behind"

"${mpi[@]}" -n 2 "$meshsim" calibrate --quick --force --attempts 1 --out profile.json >cal.out 2>&1 ||
  fail "calibrate: $(cat cal.out)"
grep -Eq "^stability \(1 attempt\): reference kernel drift [0-9]+ %" cal.out ||
  fail "no stability line: $(cat cal.out)"
grep -q '"stability": {' profile.measurements.json || fail "no stability in the measurements"
grep -q "^fitted profile" cal.out || fail "no fit report: $(cat cal.out)"
grep -q "residuals comm" cal.out || fail "no comm residuals: $(cat cal.out)"
[[ -s profile.json && -s profile.measurements.json ]] || fail "profile or measurements missing"
grep -q '"calibration_schema_version": 1' profile.measurements.json || fail "measurements unversioned"
grep -q '"schema_version": 1' profile.json || fail "profile unversioned"

"$meshsim" tp-linear --tp 2 --tokens 256 --in 256 --out 512 --hardware profile.json >sim.out 2>&1 ||
  fail "the simulator rejects the profile: $(cat sim.out)"
grep -q "hardware cpu-calibrated" sim.out || fail "simulation does not name the profile: $(cat sim.out)"

"${mpi[@]}" -n 2 "$meshsim" validate tp-linear --tp 2 --tokens 256 --in 256 --out 512 --no-check \
  --hardware profile.json --compare --json >cmp.out 2>&1 || fail "validate --compare: $(cat cmp.out)"
grep -Eq '"predicted_makespan_s": [0-9.e+-]+' cmp.out || fail "no predicted makespan: $(cat cmp.out)"
grep -Eq '"measured_makespan_s": [0-9.e+-]+' cmp.out || fail "no measured makespan: $(cat cmp.out)"
grep -Eq '"measured_makespan_s_p90": [0-9.e+-]+' cmp.out || fail "no makespan spread: $(cat cmp.out)"
grep -Eq '"repeats": 5' cmp.out || fail "--compare: not 5 timed runs: $(cat cmp.out)"

"${mpi[@]}" -n 2 "$meshsim" validate suite --hardware profile.json --only "tp linear" --json \
  >suite.out 2>&1 || fail "validate suite: $(cat suite.out)"
grep -Eq '"mape": [0-9.e+-]+' suite.out || fail "no mape: $(cat suite.out)"
grep -c '"predicted_s"' suite.out | grep -qx 3 ||
  fail "expected the 3 TP configurations (one hold-out): $(cat suite.out)"
grep -Eq '"holdout": \{' suite.out || fail "no hold-out summary: $(cat suite.out)"
grep -Eq '"measured_s_p90": [0-9.e+-]+' suite.out || fail "no spread: $(cat suite.out)"
grep -Eq '"mape_p10": [0-9.e+-]+' suite.out || fail "no MAPE spread: $(cat suite.out)"
grep -Eq '"machine": \{' suite.out || fail "no verdict on the machine: $(cat suite.out)"
echo "round trip ok"
