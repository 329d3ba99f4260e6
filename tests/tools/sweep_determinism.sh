#!/usr/bin/env bash
# meshsim sweep's rows are byte-identical for any --jobs and under mpirun:
#   sweep_determinism.sh <meshsim> <mpiexec> <sweep flags...>
# runs the sweep with --jobs 1, --jobs 2, and as 2 MPI ranks (the plans split over the ranks and
# gathered on rank 0), writing CSV and JSON, and compares the files.
set -euo pipefail
meshsim=$1
mpiexec=$2
shift 2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/meshsim-sweep.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
"$meshsim" sweep "$@" --jobs 1 --out j1.csv >/dev/null
"$meshsim" sweep "$@" --jobs 2 --out j2.csv >/dev/null
"$meshsim" sweep "$@" --jobs 2 --out j2.json >/dev/null
"$mpiexec" --allow-run-as-root --oversubscribe -n 2 "$meshsim" sweep "$@" --jobs 1 --out mpi.csv \
  >/dev/null
"$mpiexec" --allow-run-as-root --oversubscribe -n 2 "$meshsim" sweep "$@" --jobs 1 --out mpi.json \
  >/dev/null
rows=$(($(wc -l <j1.csv) - 1))
if ((rows < 2)); then
  echo "sweep_determinism: only $rows rows; the test needs a few plans" >&2
  exit 1
fi
for f in j2.csv mpi.csv; do
  cmp j1.csv "$f" || { echo "sweep_determinism: $f differs from j1.csv" >&2; exit 1; }
done
cmp j2.json mpi.json || { echo "sweep_determinism: mpi.json differs from j2.json" >&2; exit 1; }
echo "sweep_determinism: $rows rows identical for --jobs 1, --jobs 2 and 2 MPI ranks (CSV, JSON)"
