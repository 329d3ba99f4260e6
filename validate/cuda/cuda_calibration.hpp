#pragma once
// Calibration on the CUDA backend (in the plugin libmeshsim_cuda.so): the cuBLAS GEMM sweep and the
// NCCL collective sweep of validate/cuda/cuda_microbench.hpp, turned into the fitter's samples
// (validate/calibrate/profile_fit.hpp) — the same fit as the CPU backend's. Collective over
// MPI_COMM_WORLD (MPI initialized, every rank calls it); the samples are complete on every rank.
#include "schedules/calibration_programs.hpp"
#include "validate/calibrate/calibration_samples.hpp"

namespace meshsim {

// Binds this process to its GPU, runs the sweeps and appends to `run` (points and samples).
// Placement of the collectives: the world's ranks, options.ranks_per_node per node.
void run_cuda_calibration(const CalibrationOptions& options, CalibrationRun& run);

}  // namespace meshsim
