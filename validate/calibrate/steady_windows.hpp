#pragma once
// Which timed runs fell in a steady window of the machine (ARCHITECTURE.md §5). On a machine
// whose speed changes from one second to the next, a run's time measures the moment as much as
// the work: on this 2-core virtual machine, idle, the per-second median of a 512^3 fp32 GEMM
// (one BLAS thread) ranged over 3.06-5.24 ms in 60 s while a pure arithmetic loop on the other
// core held within 9 % (tests/bench/machine_noise.cpp): other work on the host slows its shared
// caches and memory, in bursts of seconds. So every timed run is
// bracketed by readings of the reference kernel (stability_probe.hpp) and kept only when both
// readings are within the drift limit of the fastest reading of the whole measurement: the
// estimates then describe the machine's own speed, and a measurement that could not find
// enough steady runs says so (detected and repeated, not absorbed). Over the runs the
// readings bracketed, the reference's slowdown and the run's own correlated at 0.78 here
// (132 suite runs, 12 configurations; a prototype printed each run's readings).
#include <cstddef>
#include <vector>

#include "validate/calibrate/stability.hpp"

namespace meshsim {

// Run i ran between readings i and i + 1 (readings.size() - 1 runs). Steady when both of its
// readings are at most (1 + max_drift) times the fastest reading. No runs for fewer than two
// readings.
std::vector<bool> steady_between(const std::vector<double>& readings, double max_drift = kMaxDrift);

// The runs that count: `runs`, minus those before `first` (the warm-up), in order, with whether
// each was steady.
struct KeptRuns {
  std::vector<double> steady;     // the steady runs' values
  std::vector<double> disturbed;  // the others'
};
KeptRuns split_runs(const std::vector<double>& values, const std::vector<bool>& steady,
                    std::size_t first);

// Minimum steady runs for an estimate made of steady runs only; below it the estimate uses
// every timed run and the measurement is reported NOT STEADY.
inline constexpr std::size_t kMinSteadyRuns = 3;

}  // namespace meshsim
